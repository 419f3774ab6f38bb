import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { MetricsService } from '../metrics/metrics.service';
import { DatabaseService } from '../database/database.service';
import { JobSpec } from '../queue/job-sql';
import { QueueService } from '../queue/queue.service';
import { ResourceType } from '../queue/tasks';

/** Requests handed to the worker per transaction; a full batch is followed at once by the next. */
const BATCH_SIZE = 500;
/** Also look for due requests this often: another replica's receiver may have written them. */
const POLL_MS = 1_000;
/** When due requests are all locked by another replica's pass, look again this much later, not at once. */
const BUSY_RETRY_MS = 50;

const TAKE_DUE_REQUESTS = `
UPDATE reconcile_request r
   SET due_at = NULL, dispatched_at = now()
  FROM (SELECT key FROM reconcile_request WHERE due_at <= now() ORDER BY due_at LIMIT $1 FOR UPDATE SKIP LOCKED) due
 WHERE r.key = due.key
RETURNING r.key, r.resource_type, r.resource_id`;

const NEXT_DUE = `SELECT min(due_at) AS next FROM reconcile_request`;

const WAITING_WITH_KEY = `SELECT count(*)::int AS n FROM graphile_worker._private_jobs WHERE key = ANY ($1::text[]) AND locked_at IS NULL`;

/**
 * Moves due reconcile requests (the outbox the receiver writes in the event's transaction) into graphile-worker
 * jobs, many per transaction and so one NOTIFY per batch. Clearing a request and adding its job commit together,
 * so a request is never lost nor turned into two jobs; replicas share the work with SKIP LOCKED.
 */
@Injectable()
export class ReconcileDispatcher implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(ReconcileDispatcher.name);
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;
  private running: Promise<void> | undefined;
  private stopped = true;

  constructor(
    private readonly database: DatabaseService,
    private readonly queue: QueueService,
    private readonly config: AppConfig,
    private readonly metrics: MetricsService,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.config.runsWorker) return;
    this.stopped = false;
    this.schedule(Date.now());
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  /** A request was just committed and becomes due at `dueAt`: dispatch it then rather than at the next poll. */
  nudge(dueAt: Date): void {
    this.schedule(dueAt.getTime());
  }

  private schedule(at: number): void {
    if (this.stopped || at >= this.timerAt) return;
    clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(() => this.tick(), Math.max(0, at - Date.now()));
  }

  private tick(): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    if (this.running) {
      // One pass at a time; look again right after this one.
      void this.running.then(() => this.schedule(Date.now()));
      return;
    }
    this.running = this.dispatchDue()
      .then(
        (next) => this.schedule(Math.min(next, Date.now() + POLL_MS)),
        (error: unknown) => {
          this.logger.warn(`Dispatching reconcile requests failed; retrying: ${(error as Error).message}`);
          this.schedule(Date.now() + POLL_MS);
        },
      )
      .finally(() => (this.running = undefined));
  }

  /** Dispatches every due request; returns when the next one falls due (ms since epoch). */
  private async dispatchDue(): Promise<number> {
    let taken: number;
    do taken = await this.dispatchBatch();
    while (taken === BATCH_SIZE && !this.stopped);
    const { rows } = await this.database.pool.query<{ next: Date | null }>(NEXT_DUE);
    const next = rows[0].next?.getTime() ?? Infinity;
    // Due yet not taken: another replica's pass holds them; its commit will clear them.
    return taken === 0 && next <= Date.now() ? Date.now() + BUSY_RETRY_MS : next;
  }

  private async dispatchBatch(): Promise<number> {
    const client = await this.database.pool.connect();
    try {
      await client.query('BEGIN');
      const { rows } = await client.query<{ key: string; resource_type: ResourceType; resource_id: string }>(
        TAKE_DUE_REQUESTS,
        [BATCH_SIZE],
      );
      const jobs: JobSpec<'reconcile'>[] = rows.map((row) => ({
        task: 'reconcile',
        payload: { resource: row.resource_type, id: row.resource_id },
        jobKey: row.key,
      }));
      // A job of the same key still waiting to run absorbs this one (graphile-worker's job_key): one read saved.
      const merged = rows.length === 0 ? 0 : (await client.query<{ n: number }>(WAITING_WITH_KEY, [rows.map((r) => r.key)])).rows[0].n;
      await this.queue.addJobs(jobs, client);
      await client.query('COMMIT');
      if (merged > 0) this.metrics.apiCallsSaved.inc({ reason: 'coalesced' }, merged);
      return rows.length;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }
}
