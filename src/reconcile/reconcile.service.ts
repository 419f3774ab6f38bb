import { randomUUID } from 'node:crypto';
import { Injectable, Logger } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { MetricsService } from '../metrics/metrics.service';
import { AccountMirrorRepository } from '../mirror/accounts/account-mirror.repository';
import { PostMirrorRepository } from '../mirror/posts/post-mirror.repository';
import { Lane } from '../pozy/budget/budget-policy';
import { PozyClient } from '../pozy/pozy-client.service';
import { PozyRateLimitedError } from '../pozy/pozy-errors';
import { ResourceType, resourceJobKey } from '../queue/tasks';
import { PozyEventRepository, ResourceEvents } from '../webhooks/pozy-event.repository';
import { ReadState, ReconcileRequestRepository } from './reconcile-request.repository';

export type ReconcileOutcome = 'written' | 'stale' | 'deleted' | 'skipped' | 'postponed';

/**
 * Events are hints: reconciling a resource reads its truth from Pozy and writes it whole, guarded, to the mirror.
 * A read is skipped when the last read of the resource began after every event received for it (less the
 * clock-skew margin, since event timestamps are Pozy's clock), since those events are then already reflected.
 */
@Injectable()
export class ReconcileService {
  private readonly logger = new Logger(ReconcileService.name);

  constructor(
    private readonly pozy: PozyClient,
    private readonly posts: PostMirrorRepository,
    private readonly accounts: AccountMirrorRepository,
    private readonly events: PozyEventRepository,
    private readonly requests: ReconcileRequestRepository,
    private readonly config: AppConfig,
    private readonly metrics: MetricsService,
  ) {}

  async reconcile(type: ResourceType, id: string): Promise<ReconcileOutcome> {
    const key = resourceJobKey(type, id);
    const [events, state] = await Promise.all([this.events.resourceEvents(type, id), this.requests.readState(key)]);
    if (this.alreadyReflected(events, state)) {
      this.metrics.apiCallsSaved.inc({ reason: 'skipped' });
      return 'skipped';
    }
    // An operator's resync (or dead-letter replay) not yet answered by a read rides its own lane; events come first.
    const lane: Lane = state.forcedAt && (!state.lastReadAt || state.lastReadAt <= state.forcedAt) ? 'operator' : 'realtime';
    let outcome: ReconcileOutcome;
    let sentAt: Date;
    try {
      ({ outcome, sentAt } = type === 'post' ? await this.reconcilePost(id, events, lane) : await this.reconcileProfile(id, events, lane));
    } catch (error) {
      if (!(error instanceof PozyRateLimitedError)) throw error;
      // A long Retry-After: the job ends, and the read is due again when Pozy said.
      await this.requests.postpone(key, error.retryAfterMs);
      this.logger.warn(`${key}: Pozy rate limit, read postponed by ${error.retryAfterMs} ms`);
      return 'postponed';
    }
    await this.requests.recordRead(key, sentAt);
    this.logger.debug(`${key}: ${outcome}`);
    return outcome;
  }

  private alreadyReflected(events: ResourceEvents, state: ReadState): boolean {
    const { lastReadAt, forcedAt } = state;
    if (!events.latest || !lastReadAt) return false;
    if (forcedAt && lastReadAt <= forcedAt) return false;
    return lastReadAt.getTime() > events.latest.getTime() + this.config.reconcileClockSkewMs;
  }

  private async reconcilePost(id: string, events: ResourceEvents, lane: Lane): Promise<{ outcome: ReconcileOutcome; sentAt: Date }> {
    const answer = await this.pozy.getPost(id, lane);
    // The read is dated by when the answering request was sent, not when the job began (waits and retries).
    const read = { readId: randomUUID(), startedAt: answer.sentAt, lastEventAt: events.latest };
    if (!answer.found) {
      const { outcome } = await this.posts.markDeleted(id, read);
      return { outcome: outcome === 'written' ? 'deleted' : 'stale', sentAt: answer.sentAt };
    }
    return { outcome: (await this.posts.write(answer.post, read)).outcome, sentAt: answer.sentAt };
  }

  private async reconcileProfile(profileId: string, events: ResourceEvents, lane: Lane): Promise<{ outcome: ReconcileOutcome; sentAt: Date }> {
    const { accounts, sentAt } = await this.pozy.listAccounts(profileId, lane);
    const written = await this.accounts.writeProfile(profileId, accounts, {
      readId: randomUUID(),
      startedAt: sentAt,
      lastEventAt: events.perAccount,
    });
    return { outcome: written.written + written.removed > 0 ? 'written' : 'stale', sentAt };
  }
}
