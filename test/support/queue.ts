import type { Pool } from 'pg';

export interface QueuedJob {
  key: string | null;
  task_identifier: string;
  revision: number;
  attempts: number;
  payload: { resource: string; id: string };
}

/** graphile-worker's job rows (its public view hides the payload), oldest first. */
export async function queuedJobs(pool: Pool): Promise<QueuedJob[]> {
  const { rows } = await pool.query<QueuedJob>(
    `SELECT j.key, t.identifier AS task_identifier, j.revision, j.attempts, j.payload
       FROM graphile_worker._private_jobs j JOIN graphile_worker._private_tasks t ON t.id = j.task_id
      ORDER BY j.id`,
  );
  return rows;
}

export interface PendingRequest {
  key: string;
  resource_type: string;
  resource_id: string;
  due_at: Date;
  requested_at: Date;
}

/** The reconcile outbox's pending reads: resources waiting to be handed to the worker. */
export async function reconcileRequests(pool: Pool): Promise<PendingRequest[]> {
  const { rows } = await pool.query<PendingRequest>(
    'SELECT key, resource_type, resource_id, due_at, requested_at FROM reconcile_request WHERE due_at IS NOT NULL ORDER BY key',
  );
  return rows;
}
