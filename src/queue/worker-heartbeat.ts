import type { JobQueueRepository } from './job-queue.repository';

/** How often a pool says it is alive, and how long without a word before its locks are taken back. */
export const HEARTBEAT_MS = 5_000;
const DEAD_AFTER_MS = 30_000;

/**
 * Our graphile-worker pools record that they are alive. A killed process leaves the jobs it had fetched locked
 * for graphile-worker's four hours; a pool that has not said it is alive for half a minute is dead, and its jobs
 * are unlocked so another pool runs them (a job may then run twice: every reconcile write is guarded).
 */
export class WorkerHeartbeat {
  constructor(
    private readonly queue: JobQueueRepository,
    private readonly poolId: string,
  ) {}

  async beat(): Promise<void> {
    await this.queue.beat(this.poolId);
  }

  /** Unlocks the jobs of pools that stopped beating; returns how many. */
  async releaseOrphans(): Promise<number> {
    const released = await this.queue.releaseOrphanedJobs(DEAD_AFTER_MS);
    await this.queue.forgetLongDeadPools();
    return released;
  }

  async stop(): Promise<void> {
    await this.queue.forgetPool(this.poolId);
  }
}
