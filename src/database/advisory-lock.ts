import type { Pool, PoolClient } from 'pg';

/** Every advisory lock the service takes, in one place so that no two uses share a key by accident. */
export enum LockKey {
  /** One backfill at a time across every replica. */
  Backfill = 7_262_001,
  /** One import or full sweep at a time across every replica. */
  Sweep = 7_262_002,
  /** One retention prune at a time: two would race for the same rows and could deadlock. */
  Retention = 7_262_003,
}

/** A held session-level advisory lock: it belongs to the connection, which is kept until `release()`. */
export interface HeldLock {
  release(): Promise<void>;
}

/**
 * Takes `key` without waiting, on a connection of its own; null when another session (another replica) holds it.
 * Releasing destroys the connection if the unlock fails, since a pooled connection must not keep the lock.
 */
export async function tryAdvisoryLock(pool: Pool, key: LockKey): Promise<HeldLock | null> {
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
