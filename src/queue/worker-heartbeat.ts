import type { Pool } from 'pg';

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
    private readonly pool: Pool,
    private readonly poolId: string,
  ) {}

  async beat(): Promise<void> {
    await this.pool.query(
      'INSERT INTO worker_heartbeat (pool_id, seen_at) VALUES ($1, now()) ON CONFLICT (pool_id) DO UPDATE SET seen_at = now()',
      [this.poolId],
    );
  }

  /** Unlocks the jobs of pools that stopped beating; returns how many. */
  async releaseOrphans(): Promise<number> {
    const dead = `locked_by IS NOT NULL
      AND locked_by NOT IN (SELECT pool_id FROM worker_heartbeat WHERE seen_at > now() - $1::int * interval '1 millisecond')`;
    // A job superseded while it ran (graphile-worker cleared its key and spent its attempts, with no error, when a
    // newer job for the same key was added) would have been deleted when it finished; it never will be now.
    await this.pool.query(
      `DELETE FROM graphile_worker._private_jobs WHERE ${dead} AND key IS NULL AND attempts >= max_attempts AND last_error IS NULL`,
      [DEAD_AFTER_MS],
    );
    const { rowCount } = await this.pool.query(
      `UPDATE graphile_worker._private_jobs SET locked_at = NULL, locked_by = NULL WHERE ${dead}`,
      [DEAD_AFTER_MS],
    );
    await this.pool.query(`DELETE FROM worker_heartbeat WHERE seen_at < now() - interval '1 day'`);
    return rowCount ?? 0;
  }

  async stop(): Promise<void> {
    await this.pool.query('DELETE FROM worker_heartbeat WHERE pool_id = $1', [this.poolId]);
  }
}
