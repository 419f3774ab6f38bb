import type { Pool } from 'pg';
import { deliver, postEvent } from './pozy-events';
import { waitFor } from './service';

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

/**
 * Delivers a post event to a workspace's path, signed with `secret`, and waits until a read of that post from Pozy
 * has begun after the delivery: the time that took, in ms (one workspace's event latency). `deadlineMs` bounds the wait:
 * a suite that runs beside the million-row suites gives it more, since one stalled commit there can hold every read.
 */
export async function timedRead(
  baseUrl: string,
  pool: Pool,
  workspace: string,
  secret: string,
  postId: string,
  deadlineMs = 60_000,
): Promise<number> {
  const at = Date.now();
  const { status } = await deliver(baseUrl, postEvent(postId), { secret, path: `/webhooks/pozy/${workspace}` });
  if (status !== 200) throw new Error(`the delivery to ${workspace} answered ${status}`);
  await waitFor(
    `${workspace}'s read of ${postId}`,
    async () => {
      const { rows } = await pool.query<{ read: Date | null }>(
        'SELECT last_read_at AS read FROM reconcile_request WHERE workspace_id = $1 AND key = $2',
        [workspace, `post:${postId}`],
      );
      // The read is dated by its request; a few ms of clock between this process and the database.
      return rows[0]?.read && rows[0].read.getTime() >= at - 5 ? true : undefined;
    },
    deadlineMs,
    10,
  );
  return Date.now() - at;
}
