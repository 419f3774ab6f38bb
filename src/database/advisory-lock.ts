import type { Pool, PoolClient } from 'pg';

/** A held session-level advisory lock: it belongs to the connection, which is kept until `release()`. */
export interface HeldLock {
  release(): Promise<void>;
}

/**
 * Takes `key` without waiting, on a connection of its own; null when another session (another replica) holds it.
 * Releasing destroys the connection if the unlock fails, since a pooled connection must not keep the lock.
 */
export async function tryAdvisoryLock(pool: Pool, key: number): Promise<HeldLock | null> {
  const client: PoolClient = await pool.connect();
  let locked = false;
  try {
    locked = (await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1) AS ok', [key])).rows[0].ok;
  } finally {
    if (!locked) client.release();
  }
  if (!locked) return null;
  return {
    release: async () => {
      const unlocked = await client.query('SELECT pg_advisory_unlock($1)', [key]).then(
        () => true,
        () => false,
      );
      client.release(!unlocked);
    },
  };
}
