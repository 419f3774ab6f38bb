import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { HeldLock, LockKey } from '../database/advisory-lock';
import { DatabaseService } from '../database/database.service';
import { LockedSchedule, ScheduledJob } from '../schedule/locked-schedule';

const DAY_MS = 86_400_000;

/** Rows deleted, per table. */
export interface PruneCounts {
  events: number;
  notificationAttempts: number;
  /** Their remaining attempts go with them (ON DELETE CASCADE) and are not counted in `notificationAttempts`. */
  notifications: number;
  backfillRuns: number;
  deadLetters: number;
  /** Permanently failed graphile-worker jobs. */
  failedJobs: number;
}

export interface PruneResult {
  /** Rows older than this were pruned. */
  cutoff: Date;
  deleted: PruneCounts;
  durationMs: number;
}

// Every statement deletes at most $2 rows, picked by primary key, so none holds many row locks for long. FOR UPDATE
// SKIP LOCKED leaves a row the service is writing right now to the next run instead of waiting for it, and checks a
// row changed since the statement began again before locking it. $1 is the cutoff.
const PRUNE = {
  // Found through the BRIN index on received_at. A redelivery of a pruned event is stored again as new: what
  // EVENT_RETENTION_DAYS trades for a bounded table.
  events: `
DELETE FROM pozy_event WHERE id IN (
  SELECT id FROM pozy_event WHERE received_at < $1 LIMIT $2 FOR UPDATE SKIP LOCKED)`,
  notificationAttempts: `
DELETE FROM notification_attempt WHERE id IN (
  SELECT id FROM notification_attempt WHERE attempted_at < $1 LIMIT $2 FOR UPDATE SKIP LOCKED)`,
  // Final states only: pending ones are still to be sent, dead ones wait for an operator. One delivered again inside
  // the window (a replay) is kept. An older pending or dead one of the same resource keeps the newer ones too: they
  // are what stops it from being sent after them.
  notifications: `
DELETE FROM notification WHERE id IN (
  SELECT n.id FROM notification n
   WHERE n.state IN ('delivered', 'superseded', 'cancelled') AND n.created_at < $1
     AND (n.delivered_at IS NULL OR n.delivered_at < $1)
     AND NOT EXISTS (SELECT 1 FROM notification o
                      WHERE o.subscription_id = n.subscription_id AND o.resource_key = n.resource_key
                        AND o.sequence < n.sequence AND o.state IN ('pending', 'dead'))
   LIMIT $2 FOR UPDATE OF n SKIP LOCKED)`,
  // Never the run BackfillRunRepository.checkpoint() answers (the newest newest_log_at of a succeeded run): without
  // it the next backfill would scan Pozy's whole 30 days of logs and store every pruned event still in them again.
  backfillRuns: `
DELETE FROM backfill_run WHERE id IN (
  SELECT id FROM backfill_run
   WHERE status <> 'running' AND finished_at < $1
     AND id IS DISTINCT FROM (SELECT id FROM backfill_run WHERE status = 'succeeded' AND newest_log_at IS NOT NULL
                               ORDER BY newest_log_at DESC LIMIT 1)
   LIMIT $2 FOR UPDATE SKIP LOCKED)`,
  deadLetters: `
DELETE FROM dead_letter WHERE id IN (
  SELECT id FROM dead_letter WHERE coalesce(replayed_at, resolved_at) < $1 LIMIT $2 FOR UPDATE SKIP LOCKED)`,
  // graphile-worker deletes the jobs that succeed, never those out of attempts. It does not touch updated_at when a
  // job fails, but a failure moves run_at past its own time: both before the cutoff means the last failure was too.
  failedJobs: `
DELETE FROM graphile_worker._private_jobs WHERE id IN (
  SELECT id FROM graphile_worker._private_jobs
   WHERE attempts >= max_attempts AND locked_at IS NULL AND updated_at < $1 AND run_at < $1
   LIMIT $2 FOR UPDATE SKIP LOCKED)`,
} as const satisfies Record<keyof PruneCounts, string>;

/**
 * Retention: deletes the events older than EVENT_RETENTION_DAYS, and notification history, finished backfill runs,
 * replayed dead letters and permanently failed jobs older than the same window, in batches of RETENTION_BATCH_SIZE.
 */
@Injectable()
export class RetentionService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(RetentionService.name);
  private running: Promise<unknown> | undefined;
  private stopping = false;
  private cron: ScheduledJob | undefined;

  constructor(
    private readonly config: AppConfig,
    private readonly database: DatabaseService,
    private readonly jobs: LockedSchedule,
  ) {}

  /** RETENTION_CRON, when set: on one replica at a time (the others skip that tick). */
  onApplicationBootstrap(): void {
    this.cron = this.jobs.schedule('retention', this.config.retention.cron, LockKey.Retention, (lock) => this.pruneHolding(lock));
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
  async prune(now = new Date()): Promise<PruneResult> {
    const started = Date.now();
    const cutoff = new Date(now.getTime() - this.config.retention.eventRetentionDays * DAY_MS);
    const deleted: PruneCounts = { events: 0, notificationAttempts: 0, notifications: 0, backfillRuns: 0, deadLetters: 0, failedJobs: 0 };
    for (const table of Object.keys(PRUNE) as (keyof PruneCounts)[]) {
      deleted[table] = await this.inBatches(PRUNE[table], cutoff);
    }
    const result: PruneResult = { cutoff, deleted, durationMs: Date.now() - started };
    this.logger.log(
      `Retention before ${cutoff.toISOString()}${this.stopping ? ' (stopped by shutdown)' : ''}: deleted ` +
        `${deleted.events} events, ${deleted.notificationAttempts} notification attempts, ${deleted.notifications} notifications, ` +
        `${deleted.backfillRuns} backfill runs, ${deleted.deadLetters} dead letters, ${deleted.failedJobs} failed jobs ` +
        `in ${result.durationMs} ms`,
    );
    return result;
  }

  /** Runs `sql` until a batch deletes fewer rows than the batch size; answers the rows deleted. */
  private async inBatches(sql: string, cutoff: Date): Promise<number> {
    const batchSize = this.config.retention.batchSize;
    let total = 0;
    while (!this.stopping) {
      const deleted = (await this.database.pool.query(sql, [cutoff, batchSize])).rowCount ?? 0;
      total += deleted;
      if (deleted < batchSize) break;
    }
    return total;
  }
}
