import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { HeldLock, LockKey } from '../database/advisory-lock';
import { BackfillRunRepository } from '../backfill/backfill-run.repository';
import { DeadLetterReplayRunRepository } from '../dead-letters/dead-letter-replay-run.repository';
import { DeadLetterRepository } from '../dead-letters/dead-letter.repository';
import { NotificationHistoryRepository } from '../notifications/notification-history.repository';
import { JobQueueRepository } from '../queue/job-queue.repository';
import { PozyEventRepository } from '../receive/pozy-event.repository';
import { ChangeRepository } from '../changes/change.repository';
import { ConsumersService } from '../changes/consumers.service';
import { LockedSchedule, ScheduledJob } from '../schedule/locked-schedule';
import { Tracing } from '../tracing/tracing.service';
import { ReconcileReadRepository } from '../reconcile/reconcile-read.repository';
import { OpsEventRepository } from '../notifications/ops-event.repository';
import { HistoryRepository } from '../mirror/history/history.repository';

const DAY_MS = 86_400_000;

/** Rows deleted, per table. */
export interface PruneCounts {
  events: number;
  notificationAttempts: number;
  /** Their remaining attempts go with them (ON DELETE CASCADE) and are not counted in `notificationAttempts`. */
  notifications: number;
  backfillRuns: number;
  /** Finished bulk replays of the dead-letter queues. */
  replayRuns: number;
  deadLetters: number;
  /** Permanently failed graphile-worker jobs. */
  failedJobs: number;
  /** Reconciles recorded on resources' timelines (reconcile_read). */
  reads: number;
  /** Operational events told of (ops_event; their notifications are pruned with the others). */
  opsEvents: number;
  /** Change-feed entries, against their own window (CHANGE_RETENTION_DAYS). */
  changes: number;
  /** Posts' and accounts' superseded versions (their history), against their own window (HISTORY_RETENTION_DAYS). */
  versions: number;
}

export interface PruneResult {
  /** Rows older than this were pruned. */
  cutoff: Date;
  /** Change-feed entries older than this were pruned. */
  changeCutoff: Date;
  /** Versions superseded (by a newer one read) before this were pruned, each resource's newest aside. */
  historyCutoff: Date;
  deleted: PruneCounts;
  durationMs: number;
}

/**
 * Retention: deletes the events older than EVENT_RETENTION_DAYS, and notification history, finished backfill runs and
 * dead-letter replay runs, replayed dead letters and permanently failed jobs older than the same window, and the change feed's entries older
 * than CHANGE_RETENTION_DAYS, in batches of RETENTION_BATCH_SIZE.
 */
@Injectable()
export class RetentionService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(RetentionService.name);
  private running: Promise<unknown> | undefined;
  private stopping = false;
  private cron: ScheduledJob | undefined;
  /** Per table, run in this order; each answers how many rows it deleted. */
  private readonly pruners: Record<keyof PruneCounts, { days: number; prune: (cutoff: Date, limit: number) => Promise<number> }>;
  /** The run's lowest position an active named consumer has committed: the feed keeps every entry after it. */
  private consumerHold: string | null = null;

  constructor(
    private readonly config: AppConfig,
    private readonly jobs: LockedSchedule,
    private readonly events: PozyEventRepository,
    private readonly notifications: NotificationHistoryRepository,
    private readonly backfillRuns: BackfillRunRepository,
    private readonly deadLetters: DeadLetterRepository,
    private readonly replayRuns: DeadLetterReplayRunRepository,
    private readonly queue: JobQueueRepository,
    private readonly changes: ChangeRepository,
    private readonly tracing: Tracing,
    private readonly reads: ReconcileReadRepository,
    private readonly opsEvents: OpsEventRepository,
    private readonly versionHistory: HistoryRepository,
    private readonly consumers: ConsumersService,
  ) {
    // Each table's owner deletes its own rows: at most `limit` a statement, picked by primary key with SKIP LOCKED,
    // so none holds many row locks for long and a row being written right now is left to the next run.
    // Each names the window it keeps: the history EVENT_RETENTION_DAYS, the change feed CHANGE_RETENTION_DAYS.
    const { eventRetentionDays: history, changeRetentionDays: feed, historyRetentionDays: versions } = this.config.retention;
    this.pruners = {
      events: { days: history, prune: (cutoff, limit) => this.events.pruneBefore(cutoff, limit) },
      notificationAttempts: { days: history, prune: (cutoff, limit) => this.notifications.pruneAttemptsBefore(cutoff, limit) },
      notifications: { days: history, prune: (cutoff, limit) => this.notifications.pruneBefore(cutoff, limit) },
      backfillRuns: { days: history, prune: (cutoff, limit) => this.backfillRuns.pruneBefore(cutoff, limit) },
      replayRuns: { days: history, prune: (cutoff, limit) => this.replayRuns.pruneBefore(cutoff, limit) },
      deadLetters: { days: history, prune: (cutoff, limit) => this.deadLetters.pruneBefore(cutoff, limit) },
      failedJobs: { days: history, prune: (cutoff, limit) => this.queue.pruneFailedJobs(cutoff, limit) },
      reads: { days: history, prune: (cutoff, limit) => this.reads.pruneBefore(cutoff, limit) },
      opsEvents: { days: history, prune: (cutoff, limit) => this.opsEvents.pruneBefore(cutoff, limit) },
      changes: { days: feed, prune: (cutoff, limit) => this.changes.pruneBefore(cutoff, limit, this.consumerHold) },
      versions: { days: versions, prune: (cutoff, limit) => this.versionHistory.pruneBefore(cutoff, limit) },
    };
  }

  /** RETENTION_CRON, when set: on one replica at a time (the others skip that tick). */
  onApplicationBootstrap(): void {
    this.cron = this.jobs.schedule(
      'retention',
      this.config.retention.cron,
      async () => this.running === undefined && (await this.pruneExclusive()) !== null,
    );
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.cron?.stop();
    // A long backlog stops between two batches rather than holding up the shutdown; the next run goes on.
    this.stopping = true;
    await this.running;
  }

  /** Prunes now unless a prune is running on any replica (then null). */
  async pruneExclusive(now = new Date()): Promise<PruneResult | null> {
    const lock = await this.jobs.tryLock(LockKey.Retention);
    if (!lock) return null;
    return this.pruneHolding(lock, now);
  }

  /** Prunes with the lock held, and lets it go. */
  private async pruneHolding(lock: HeldLock, now = new Date()): Promise<PruneResult> {
    const run = this.prune(now).finally(() => lock.release());
    this.running = run.catch(() => undefined);
    try {
      return await run;
    } finally {
      this.running = undefined;
    }
  }

  /** Deletes what is older than the retention window before `now`; answers how many rows, per table. */
  prune(now = new Date()): Promise<PruneResult> {
    // A trace of its own, with a span per table.
    return this.tracing.span('retention run', { root: true, attributes: { 'pozy_sync.run.kind': 'retention' } }, () => this.pruneAll(now));
  }

  private async pruneAll(now: Date): Promise<PruneResult> {
    const started = Date.now();
    const before = (days: number) => new Date(now.getTime() - days * DAY_MS);
    const cutoff = before(this.config.retention.eventRetentionDays);
    const changeCutoff = before(this.config.retention.changeRetentionDays);
    const historyCutoff = before(this.config.retention.historyRetentionDays);
    const deleted: PruneCounts = {
      events: 0,
      notificationAttempts: 0,
      notifications: 0,
      backfillRuns: 0,
      replayRuns: 0,
      deadLetters: 0,
      failedJobs: 0,
      reads: 0,
      opsEvents: 0,
      changes: 0,
      versions: 0,
    };
    // Named consumers first: those CONSUMER_MAX_LAG_DAYS behind expire, the others hold the feed at their position.
    this.consumerHold = await this.consumers.holdForRetention(now);
    for (const table of Object.keys(this.pruners) as (keyof PruneCounts)[]) {
      const { days, prune } = this.pruners[table];
      deleted[table] = await this.tracing.span(`retention ${table}`, { attributes: { 'pozy_sync.retention.days': days } }, async (span) => {
        const rows = await this.inBatches(prune, before(days));
        span.setAttribute('pozy_sync.retention.deleted', rows);
        return rows;
      });
    }
    const result: PruneResult = { cutoff, changeCutoff, historyCutoff, deleted, durationMs: Date.now() - started };
    this.logger.log(
      `Retention before ${cutoff.toISOString()}${this.stopping ? ' (stopped by shutdown)' : ''}: deleted ` +
        `${deleted.events} events, ${deleted.notificationAttempts} notification attempts, ${deleted.notifications} notifications, ` +
        `${deleted.backfillRuns} backfill runs, ${deleted.replayRuns} dead-letter replay runs, ${deleted.deadLetters} dead letters, ${deleted.failedJobs} failed jobs, ${deleted.reads} reconciles of timelines, ${deleted.opsEvents} operational events, ` +
        `${deleted.changes} change-feed entries before ${changeCutoff.toISOString()}` +
        `${this.consumerHold === null ? '' : ` (none after position ${this.consumerHold}, held by a named consumer)`}, ` +
        `${deleted.versions} versions superseded before ${historyCutoff.toISOString()} ` +
        `in ${result.durationMs} ms`,
    );
    return result;
  }

  /** Runs `prune` until a batch deletes fewer rows than the batch size; answers the rows deleted. */
  private async inBatches(prune: (cutoff: Date, limit: number) => Promise<number>, cutoff: Date): Promise<number> {
    const batchSize = this.config.retention.batchSize;
    let total = 0;
    while (!this.stopping) {
      const deleted = await prune(cutoff, batchSize);
      total += deleted;
      if (deleted < batchSize) break;
    }
    return total;
  }
}
