import { randomUUID } from 'node:crypto';
import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { CronJob } from 'cron';
import { AppConfig } from '../config/app-config';
import { tryAdvisoryLock } from '../database/advisory-lock';
import { DatabaseService } from '../database/database.service';
import { AccountMirrorRepository } from '../mirror/accounts/account-mirror.repository';
import { PostMirrorRepository } from '../mirror/posts/post-mirror.repository';
import { PozyAccountDto } from '../pozy/dto/pozy-account.dto';
import { PozyClient } from '../pozy/pozy-client.service';

export interface SweepCounts {
  created: number;
  changed: number;
  /** Posts Pozy answers 404 for; accounts no longer listed. */
  deleted: number;
  unchanged: number;
}

export interface SweepReport {
  dryRun: boolean;
  posts: SweepCounts;
  accounts: SweepCounts;
  durationMs: number;
}

const PAGE_SIZE = 500;
/** One sweep at a time across every replica. */
const SWEEP_LOCK_KEY = 7_262_002;
const counts = (): SweepCounts => ({ created: 0, changed: 0, deleted: 0, unchanged: 0 });
const read = (startedAt: Date) => ({ readId: randomUUID(), startedAt, lastEventAt: null });

/**
 * The full sweep: lists every post and account from Pozy and reconciles each difference with the mirror, for
 * what no event and no log row can tell (changes older than the logs' 30 days, silent edits, a mirror restored
 * from an old backup). Writes go through the same guarded statements as reconcile jobs; a dry run only counts.
 */
@Injectable()
export class SweepService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(SweepService.name);
  private scheduled: Promise<unknown> | undefined;

  constructor(
    private readonly pozy: PozyClient,
    private readonly database: DatabaseService,
    private readonly posts: PostMirrorRepository,
    private readonly accounts: AccountMirrorRepository,
    private readonly config: AppConfig,
    private readonly scheduler: SchedulerRegistry,
  ) {}

  /** SWEEP_CRON, when set: on one replica at a time (the others skip that tick). */
  onApplicationBootstrap(): void {
    if (!this.config.runsWorker || !this.config.sweepCron) return;
    const job = CronJob.from({ cronTime: this.config.sweepCron, onTick: () => void this.scheduledSweep(), start: true });
    this.scheduler.addCronJob('sweep', job);
  }

  async beforeApplicationShutdown(): Promise<void> {
    if (this.scheduler.doesExist('cron', 'sweep')) this.scheduler.deleteCronJob('sweep');
    await this.scheduled;
  }

  private async scheduledSweep(): Promise<void> {
    if (this.scheduled) return;
    const lock = await tryAdvisoryLock(this.database.pool, SWEEP_LOCK_KEY);
    if (!lock) return;
    try {
      this.scheduled = this.sweep(false).catch((error: unknown) => this.logger.error(`Scheduled sweep failed: ${(error as Error).message}`));
      await this.scheduled;
    } finally {
      this.scheduled = undefined;
      await lock.release();
    }
  }


  async sweep(dryRun: boolean): Promise<SweepReport> {
    const started = Date.now();
    const report: SweepReport = {
      dryRun,
      posts: await this.sweepPosts(dryRun),
      accounts: await this.sweepAccounts(dryRun),
      durationMs: 0,
    };
    report.durationMs = Date.now() - started;
    this.logger.log(`Sweep${dryRun ? ' (dry run)' : ''}: posts ${JSON.stringify(report.posts)}, accounts ${JSON.stringify(report.accounts)}`);
    return report;
  }

  private async sweepPosts(dryRun: boolean): Promise<SweepCounts> {
    const result = counts();
    const { rows } = await this.database.pool.query<{ id: string; updated: Date | null; deleted: boolean }>(
      'SELECT id, pozy_updated_at AS updated, deleted_at IS NOT NULL AS deleted FROM post',
    );
    const mirror = new Map(rows.map((r) => [r.id, r]));
    const listed = new Set<string>();
    for (let page = 1, pages = 1; page <= pages; page += 1) {
      const answer = await this.pozy.listPosts(page, PAGE_SIZE);
      pages = answer.pages;
      for (const post of answer.posts) {
        listed.add(post._id);
        const row = mirror.get(post._id);
        const kind = !row ? 'created' : row.deleted || row.updated?.getTime() !== new Date(post.updatedAt).getTime() ? 'changed' : 'unchanged';
        result[kind] += 1;
        if (!dryRun && kind !== 'unchanged') await this.posts.write(post, read(answer.sentAt));
      }
    }
    // Not listed: gone, or deleted or created while the pages were read. Each one's own answer says which.
    for (const row of rows.filter((r) => !r.deleted && !listed.has(r.id))) {
      const answer = await this.pozy.getPost(row.id);
      if (!answer.found) {
        result.deleted += 1;
        if (!dryRun) await this.posts.markDeleted(row.id, read(answer.sentAt));
      } else if (new Date(answer.post.updatedAt).getTime() !== row.updated?.getTime()) {
        result.changed += 1;
        if (!dryRun) await this.posts.write(answer.post, read(answer.sentAt));
      } else {
        result.unchanged += 1;
      }
    }
    return result;
  }

  private async sweepAccounts(dryRun: boolean): Promise<SweepCounts> {
    const result = counts();
    const { accounts, sentAt } = await this.pozy.listAllAccounts();
    const { rows } = await this.database.pool.query<{
      id: string;
      profile_id: string;
      platform: string;
      username: string | null;
      display_name: string | null;
      is_active: boolean;
      needs_reconnection: boolean;
      removed: boolean;
    }>('SELECT id, profile_id, platform, username, display_name, is_active, needs_reconnection, removed_at IS NOT NULL AS removed FROM account');
    const mirror = new Map(rows.map((r) => [r.id, r]));
    const byProfile = new Map<string, PozyAccountDto[]>();
    for (const account of accounts) {
      byProfile.set(account.profileId, [...(byProfile.get(account.profileId) ?? []), account]);
      const row = mirror.get(account._id);
      const same =
        row &&
        !row.removed &&
        row.profile_id === account.profileId &&
        row.platform === account.platform &&
        row.username === (account.username ?? null) &&
        row.display_name === (account.displayName ?? null) &&
        row.is_active === account.isActive &&
        row.needs_reconnection === (account.needsReconnection ?? false);
      result[!row ? 'created' : same ? 'unchanged' : 'changed'] += 1;
    }
    const listed = new Set(accounts.map((a) => a._id));
    const gone = rows.filter((r) => !r.removed && !listed.has(r.id));
    result.deleted = gone.length;
    if (!dryRun) {
      // Whole profiles, so that each profile's removals are written with its list, in one transaction.
      for (const profileId of new Set([...byProfile.keys(), ...gone.map((r) => r.profile_id)])) {
        await this.accounts.writeProfile(profileId, byProfile.get(profileId) ?? [], { ...read(sentAt), lastEventAt: new Map() });
      }
    }
    return result;
  }
}
