import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { WakeableLoop } from '../common/wakeable-loop';
import { AppConfig } from '../config/app-config';
import { MetricsService } from '../metrics/metrics.service';
import { DatabaseService } from '../database/database.service';
import { JobQueueRepository, JobSpec } from '../queue/job-queue.repository';
import { isResourceType, workspaceJobKey } from '../common/resources';
import { ReconcileRequestRepository } from './reconcile-request.repository';
import { ReconcileSignal } from '../receive/reconcile-signal';

/** Requests handed to the worker per transaction; a full batch is followed at once by the next. */
const BATCH_SIZE = 500;
/** Also look for due requests this often: another replica's receiver may have written them. */
const POLL_MS = 1_000;
/**
 * Under a stream of deliveries every group commit signals new requests; passes at most this often gather them into
 * one transaction (and one NOTIFY) instead of a pass per commit, whose queries would compete with the receiver's for
 * the same cores. A request after a quiet spell is dispatched at once.
 */
const MIN_PASS_GAP_MS = 50;
/** When due requests are all locked by another replica's pass, look again this much later, not at once. */
const BUSY_RETRY_MS = 50;
/** A workspace's recent dispatches count half after this long: its burst stops weighing on its next jobs' priority. */
const BURST_HALF_LIFE_MS = 10_000;
/** graphile-worker's priority is an int; past this, a burst's jobs are all equally late. */
const MAX_PRIORITY = 30_000;

/**
 * Fairness between workspaces: a job's priority is how many of its workspace's reads were dispatched lately (a
 * count that halves every BURST_HALF_LIFE_MS), and graphile-worker runs lower priorities first. A workspace with a
 * burst of 10,000 events gets priorities climbing to 10,000; another's single event gets 0 or 1 and runs next,
 * ahead of the burst's waiting jobs, instead of behind them. One workspace alone keeps its order nearly as it was.
 */
export class BurstPriority {
  private readonly recent = new Map<string, { count: number; at: number }>();

  next(workspace: string, now = Date.now()): number {
    const entry = this.recent.get(workspace);
    const count = entry ? entry.count * Math.pow(0.5, (now - entry.at) / BURST_HALF_LIFE_MS) : 0;
    this.recent.set(workspace, { count: count + 1, at: now });
    // Forgotten once negligible, so the map holds only the workspaces busy lately.
    if (this.recent.size > 10_000)
      for (const [id, e] of this.recent) if (e.count * Math.pow(0.5, (now - e.at) / BURST_HALF_LIFE_MS) < 1) this.recent.delete(id);
    return Math.min(MAX_PRIORITY, Math.floor(count));
  }
}

/**
 * Moves due reconcile requests (the outbox the receiver writes in the event's transaction) into graphile-worker
 * jobs, many per transaction and so one NOTIFY per batch. Clearing a request and adding its job commit together,
 * so a request is never lost nor turned into two jobs; replicas share the work with SKIP LOCKED.
 */
@Injectable()
export class ReconcileDispatcher implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(ReconcileDispatcher.name);
  private stopping = false;
  private readonly priority = new BurstPriority();
  private unsubscribe: (() => void) | undefined;
  /** When the latest pass began (ms since the epoch). */
  private lastPassAt = -Infinity;
  private readonly loop = new WakeableLoop({
    pass: () => this.dispatchDue(),
    idleMs: POLL_MS,
    retryMs: POLL_MS,
    logger: this.logger,
    what: 'Dispatching reconcile requests',
  });

  constructor(
    private readonly database: DatabaseService,
    private readonly requests: ReconcileRequestRepository,
    private readonly queue: JobQueueRepository,
    private readonly config: AppConfig,
    private readonly metrics: MetricsService,
    private readonly signal: ReconcileSignal,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.config.runsWorker) return;
    // A request just committed that falls due at `dueAt`: dispatched then rather than at the next poll.
    this.unsubscribe = this.signal.subscribe((dueAt) => this.loop.wakeAt(Math.max(dueAt.getTime(), this.lastPassAt + MIN_PASS_GAP_MS)));
    this.loop.start();
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopping = true;
    this.unsubscribe?.();
    await this.loop.stop();
  }

  /** Dispatches every due request; returns when the next one falls due (ms since epoch). */
  private async dispatchDue(): Promise<number> {
    this.lastPassAt = Date.now();
    let taken: number;
    do taken = await this.dispatchBatch();
    while (taken === BATCH_SIZE && !this.stopping);
    const next = (await this.requests.nextDueAt())?.getTime() ?? Infinity;
    // Due yet not taken: another replica's pass holds them; its commit will clear them.
    return Math.max(taken === 0 && next <= Date.now() ? Date.now() + BUSY_RETRY_MS : next, this.lastPassAt + MIN_PASS_GAP_MS);
  }

  private async dispatchBatch(): Promise<number> {
    const { taken, merged } = await this.database.db.transaction().execute(async (trx) => {
      const due = await this.requests.takeDue(BATCH_SIZE, trx);
      const jobs: JobSpec<'reconcile'>[] = [];
      const keys: string[] = [];
      for (const { workspace_id: workspace, key: requestKey, resource_type: resource, resource_id: id } of due) {
        const key = workspaceJobKey(workspace, requestKey);
        // Only the receiver and the admin resync write requests, both with a known type.
        if (!isResourceType(resource)) {
          this.logger.error(`Reconcile request ${key} names an unknown resource type (${resource}); dropped`);
          continue;
        }
        jobs.push({ task: 'reconcile', payload: { workspace, resource, id }, jobKey: key, priority: this.priority.next(workspace) });
        keys.push(key);
      }
      // A job of the same key still waiting to run absorbs this one (graphile-worker's job_key): one read saved.
      const merged = await this.queue.countWaitingWithKeys(keys, trx);
      await this.queue.addJobs(jobs, trx);
      return { taken: due.length, merged };
    });
    if (merged > 0) this.metrics.apiCallsSaved.inc({ reason: 'coalesced' }, merged);
    return taken;
  }
}
