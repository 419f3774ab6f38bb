import { Injectable } from '@nestjs/common';
import { sql } from 'kysely';
import { type Db, DatabaseService } from '../database/database.service';
import { milliseconds, now } from '../database/sql-expressions';
import type { TaskName, TaskPayload } from './tasks';
import { GenerateSql, Sample } from '../database/sql-snapshot';

/** How a job's last_error reads when the database failed under it rather than the job (see isDatabaseUnavailable). */
const DATABASE_FAILURE =
  'read-only transaction|in recovery|terminating connection|Connection terminated|connection is closed|ECONNREFUSED|ECONNRESET|the database system is|timeout exceeded when trying to connect|connection timeout|not read-write';

export interface JobSpec<N extends TaskName = TaskName> {
  task: N;
  payload: TaskPayload<N>;
  /** One pending job per key; adding another with the same key updates the pending one instead. */
  jobKey?: string;
  /** Lower runs first (graphile-worker's order: priority, then run time); default 0. */
  priority?: number;
}

/**
 * Every statement on graphile-worker's tables (its own schema, which it migrates itself, so the generated types do
 * not cover it: these are `sql` statements), and on worker_heartbeat, which says which of our pools are alive.
 */
@Injectable()
export class JobQueueRepository {
  constructor(private readonly database: DatabaseService) {}

  /**
   * Adds a batch of jobs, to run now, with `graphile_worker.add_jobs` in one statement. graphile-worker NOTIFYs
   * once per call, and a NOTIFY serialises commits database-wide, so callers batch rather than add per event.
   * A pending job with the same key keeps its run time (`preserve_run_at`). Pass `db` (a transaction) to make the
   * jobs part of it.
   */
  @GenerateSql({ params: [[{ task: 'reconcile', payload: { resource: 'post', id: Sample.STRING }, jobKey: `post:${Sample.STRING}` }]] })
  async addJobs(specs: readonly JobSpec[], db: Db = this.database.db): Promise<number> {
    if (specs.length === 0) return 0;
    const json = JSON.stringify(
      specs.map((spec) => ({ task: spec.task, payload: spec.payload, job_key: spec.jobKey ?? null, priority: spec.priority ?? null })),
    );
    const { rows } = await sql<{ added: number }>`
SELECT count(*)::int AS added
  FROM graphile_worker.add_jobs(
    ARRAY(
      SELECT ROW(s.task, s.payload, NULL, NULL, NULL, s.job_key, s.priority, NULL)::graphile_worker.job_spec
        FROM json_to_recordset(${json}::json) AS s(task text, payload json, job_key text, priority smallint)
    ),
    true
  )`.execute(db);
    return rows[0].added;
  }

  /** How many of `keys` have a job still waiting to run (not locked by a worker). */
  @GenerateSql({ params: [[Sample.UUID]] })
  async countWaitingWithKeys(keys: readonly string[], db: Db = this.database.db): Promise<number> {
    if (keys.length === 0) return 0;
    const { rows } = await sql<{ n: number }>`
SELECT count(*)::int AS n FROM graphile_worker._private_jobs WHERE key = ANY (${keys}::text[]) AND locked_at IS NULL`.execute(db);
    return rows[0].n;
  }

  /** Says the pool `poolId` is alive now. */
  @GenerateSql({ params: [Sample.UUID] })
  async beat(poolId: string): Promise<void> {
    await this.database.db
      .insertInto('worker_heartbeat')
      .values((eb) => ({ pool_id: poolId, seen_at: eb.fn('now') }))
      .onConflict((oc) => oc.column('pool_id').doUpdateSet((eb) => ({ seen_at: eb.fn('now') })))
      .execute();
  }

  /** Unlocks the jobs of pools that have not said they are alive for `deadAfterMs`; returns how many. */
  @GenerateSql({ params: [Sample.NUMBER] })
  async releaseOrphanedJobs(deadAfterMs: number): Promise<number> {
    const alive = this.database.db
      .selectFrom('worker_heartbeat')
      .select('pool_id')
      .where('seen_at', '>', sql<Date>`${now()} - ${milliseconds(deadAfterMs, 'int')}`);
    // Kysely parenthesises the subquery: `NOT IN (SELECT ...)`.
    const dead = sql`locked_by IS NOT NULL AND locked_by NOT IN ${alive}`;
    // A job superseded while it ran (graphile-worker cleared its key and spent its attempts, with no error, when a
    // newer job for the same key was added) would have been deleted when it finished; it never will be now.
    await sql`
DELETE FROM graphile_worker._private_jobs WHERE ${dead} AND key IS NULL AND attempts >= max_attempts AND last_error IS NULL`.execute(
      this.database.db,
    );
    const { numAffectedRows } = await sql`UPDATE graphile_worker._private_jobs SET locked_at = NULL, locked_by = NULL WHERE ${dead}`.execute(
      this.database.db,
    );
    return Number(numAffectedRows ?? 0);
  }

  /**
   * Jobs whose last attempt failed for want of a writable database (a failover, a restart), waiting out graphile-worker's
   * backoff of up to minutes: due now instead, since the cause is gone. Answers how many.
   */
  @GenerateSql()
  async retryDatabaseFailures(): Promise<number> {
    const { numAffectedRows } = await sql`
UPDATE graphile_worker._private_jobs SET run_at = now()
WHERE locked_at IS NULL AND run_at > now() AND attempts < max_attempts AND last_error ~* ${DATABASE_FAILURE}`.execute(this.database.db);
    return Number(numAffectedRows ?? 0);
  }

  /** Forgets pools not seen for a day (long dead: their jobs were released long ago). */
  @GenerateSql({ params: [] })
  async forgetLongDeadPools(): Promise<void> {
    await this.database.db
      .deleteFrom('worker_heartbeat')
      .where('seen_at', '<', sql<Date>`now() - interval '1 day'`)
      .execute();
  }

  /** The pool `poolId` stopped: it holds no job any more. */
  @GenerateSql({ params: [Sample.UUID] })
  async forgetPool(poolId: string): Promise<void> {
    await this.database.db.deleteFrom('worker_heartbeat').where('pool_id', '=', poolId).execute();
  }

  /**
   * Retention: deletes up to `limit` permanently failed jobs whose last failure was before `cutoff`; answers how many.
   * graphile-worker deletes the jobs that succeed, never those out of attempts. It does not touch updated_at when a
   * job fails, but a failure moves run_at past its own time: both before the cutoff means the last failure was too.
   * SKIP LOCKED leaves a row being written right now to the next run.
   */
  @GenerateSql({ params: [Sample.DATE, Sample.NUMBER] })
  async pruneFailedJobs(cutoff: Date, limit: number, db: Db = this.database.db): Promise<number> {
    const { numAffectedRows } = await sql`
DELETE FROM graphile_worker._private_jobs WHERE id IN (
  SELECT id FROM graphile_worker._private_jobs
   WHERE attempts >= max_attempts AND locked_at IS NULL AND updated_at < ${cutoff} AND run_at < ${cutoff}
   LIMIT ${limit} FOR UPDATE SKIP LOCKED)`.execute(db);
    return Number(numAffectedRows ?? 0);
  }
}
