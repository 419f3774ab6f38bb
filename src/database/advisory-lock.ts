import { sql } from 'kysely';
import type { Db } from './database.service';

/** Every advisory lock the service takes, in one place so that no two uses share a key by accident. */
export enum LockKey {
  /** One backfill at a time across every replica. */
  Backfill = 7_262_001,
  /** One import or full sweep at a time across every replica. */
  Sweep = 7_262_002,
  /** One retention prune at a time: two would race for the same rows and could deadlock. */
  Retention = 7_262_003,
  /** One change-feed sequencer pass at a time: positions are handed out in one serialised stream. */
  ChangeSequencer = 7_262_004,
  /**
   * With an account id's hash as the second key: held (exclusive) by the transaction that mirrors the account for the
   * first time until it commits, and waited for (shared) by the recheck of a post that named the account before it
   * was mirrored. Either the recheck sees the account, or the account's transaction sees the post.
   */
  AccountFirstMirrored = 7_262_005,
  /** One bulk replay of the delivery dead-letter queue at a time across every replica. */
  DeadLetterReplay = 7_262_006,
}

/** A held session-level advisory lock: it belongs to the connection, which is kept until `release()`. */
export interface HeldLock {
  /** Unlocks and gives the connection back; resolves once it has. */
  release(): Promise<void>;
}

/**
 * Takes `key` without waiting, on a connection of its own held until `release()`; null when another session (another
 * replica) holds it. A replica that dies loses the connection, and the lock with it.
 */
export function tryAdvisoryLock(db: Db, key: LockKey): Promise<HeldLock | null> {
  return new Promise<HeldLock | null>((resolve, reject) => {
    let answered = false;
    let release!: () => void;
    const released = new Promise<void>((resolveRelease) => (release = resolveRelease));
    const connection = db.connection().execute(async (conn) => {
      const { rows } = await sql<{ ok: boolean }>`SELECT pg_try_advisory_lock(${key}) AS ok`.execute(conn);
      answered = true;
      if (!rows[0].ok) return resolve(null);
      resolve({
        release: async () => {
          release();
          await connection.catch(() => undefined);
        },
      });
      await released;
      // A failed unlock means a broken connection, whose session (and lock) is gone with it.
      await sql`SELECT pg_advisory_unlock(${key})`.execute(conn).catch(() => undefined);
    });
    connection.catch((error: unknown) => {
      if (!answered) reject(error instanceof Error ? error : new Error(String(error)));
    });
  });
}
