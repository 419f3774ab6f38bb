import type { Pool } from 'pg';
import type { PozyWorld } from '../../simulator/world';
import { waitFor } from './service';

export interface RunRow {
  id: string;
  kind: string;
  status: string;
  phase: string;
  pass: number;
  posts_done: number;
  posts_total: number | null;
  pages_read: number;
  posts_created: number;
  posts_changed: number;
  posts_deleted: number;
  posts_unchanged: number;
  accounts_created: number;
  error: string | null;
}

/** The newest import or sweep run, as stored. */
export async function latestRun(pool: Pool, kind: 'import' | 'sweep' = 'import'): Promise<RunRow | undefined> {
  const { rows } = await pool.query<RunRow>('SELECT * FROM sweep_run WHERE kind = $1 ORDER BY started_at DESC LIMIT 1', [kind]);
  return rows[0];
}

/** Waits until the newest import has ended (any status but `running`), and answers it. */
export function importEnded(pool: Pool, timeoutMs: number, what = 'the import to end', intervalMs?: number): Promise<RunRow> {
  return waitFor(
    what,
    async () => {
      const run = await latestRun(pool);
      return run && run.status !== 'running' ? run : undefined;
    },
    timeoutMs,
    intervalMs,
  );
}

/** Every post (live or deleted) and profile the world holds: an import or a sweep needs no event to know them. */
export function everything(world: PozyWorld): { postIds: string[]; profileIds: string[] } {
  const truth = world.snapshot();
  return { postIds: [...truth.posts.map((p) => p._id), ...truth.deletedPostIds], profileIds: world.listProfiles().map((p) => p._id) };
}
