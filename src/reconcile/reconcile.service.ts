import { randomUUID } from 'node:crypto';
import { Injectable, Logger } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { AccountMirrorRepository } from '../mirror/accounts/account-mirror.repository';
import { PostMirrorRepository } from '../mirror/posts/post-mirror.repository';
import { PozyClient } from '../pozy/pozy-client.service';
import { ResourceType, resourceJobKey } from '../queue/tasks';
import { ResourceStateRepository } from './resource-state.repository';

export type ReconcileOutcome = 'written' | 'stale' | 'deleted' | 'skipped';

/** Counts of what reconciling did, for the bench, the demo and metrics. */
export interface ReconcileCounters {
  reads: number;
  skipped: number;
  written: number;
  stale: number;
}

/**
 * Events are hints: reconciling a resource reads its truth from Pozy and writes it whole, guarded, to the mirror.
 * A read is skipped when the last read of the resource began after every event received for it (less the
 * clock-skew margin), since those events are then already reflected.
 */
@Injectable()
export class ReconcileService {
  private readonly logger = new Logger(ReconcileService.name);
  readonly counters: ReconcileCounters = { reads: 0, skipped: 0, written: 0, stale: 0 };

  constructor(
    private readonly pozy: PozyClient,
    private readonly posts: PostMirrorRepository,
    private readonly accounts: AccountMirrorRepository,
    private readonly state: ResourceStateRepository,
    private readonly config: AppConfig,
  ) {}

  async reconcile(type: ResourceType, id: string): Promise<ReconcileOutcome> {
    const key = resourceJobKey(type, id);
    const [events, lastReadAt] = await Promise.all([this.state.events(type, id), this.state.lastReadAt(key)]);
    if (events.latest && lastReadAt && lastReadAt.getTime() > events.latest.getTime() + this.config.reconcileClockSkewMs) {
      this.counters.skipped += 1;
      return 'skipped';
    }
    const read = { readId: randomUUID(), startedAt: new Date() };
    this.counters.reads += 1;
    const outcome = type === 'post' ? await this.reconcilePost(id, read, events.latest) : await this.reconcileProfile(id, read, events.perAccount);
    await this.state.recordRead(key, read.startedAt);
    this.counters[outcome === 'stale' ? 'stale' : 'written'] += 1;
    this.logger.debug(`${key}: ${outcome}`);
    return outcome;
  }

  private async reconcilePost(id: string, read: { readId: string; startedAt: Date }, lastEventAt: Date | null): Promise<ReconcileOutcome> {
    const answer = await this.pozy.getPost(id);
    if (!answer.found) {
      const outcome = await this.posts.markDeleted(id, { ...read, lastEventAt });
      return outcome === 'written' ? 'deleted' : 'stale';
    }
    return this.posts.write(answer.post, { ...read, lastEventAt });
  }

  private async reconcileProfile(
    profileId: string,
    read: { readId: string; startedAt: Date },
    lastEventAt: Map<string, Date>,
  ): Promise<ReconcileOutcome> {
    const accounts = await this.pozy.listAccounts(profileId);
    const outcome = await this.accounts.writeProfile(profileId, accounts, { ...read, lastEventAt });
    return outcome.written + outcome.removed > 0 || accounts.length === 0 ? 'written' : 'stale';
  }
}
