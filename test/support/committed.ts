import type { Pool } from 'pg';

/**
 * Transactions committed (or rolled back) in database `name`, as PostgreSQL counts them (pg_stat_database): every
 * statement sent outside a transaction is one. Read through a pool on another database, so that reading counts nothing.
 */
export async function committed(admin: Pick<Pool, 'query'>, name: string): Promise<number> {
  const { rows } = await admin.query<{ n: string }>('SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = $1', [name]);
  return Number(rows[0].n);
}

/**
 * PostgreSQL's backends report their counts at most once a second, and an idle one within 10 s (PGSTAT_IDLE_INTERVAL
 * in pgstat.c): a count read this long after something happened includes it.
 */
export const REPORTED_WITHIN_MS = 11_000;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Transactions committed in database `name` from the start of `phase` until REPORTED_WITHIN_MS after it, and that
 * span in seconds, beside what `phase` answered. `settled`: everything before the phase was reported already (a phase
 * measured right before).
 */
export async function measured<T>(
  admin: Pick<Pool, 'query'>,
  name: string,
  phase: () => Promise<T>,
  settled = false,
): Promise<{ total: number; seconds: number; result: T }> {
  if (!settled) await sleep(REPORTED_WITHIN_MS);
  const before = await committed(admin, name);
  const started = Date.now();
  const result = await phase();
  await sleep(REPORTED_WITHIN_MS);
  return { total: (await committed(admin, name)) - before, seconds: (Date.now() - started) / 1000, result };
}
