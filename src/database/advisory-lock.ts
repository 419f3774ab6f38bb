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
   * first time until it commits, and shared by a post write naming the account while it is not mirrored. Either the
   * post write sees the account, or the account's transaction sees the post.
   */
  AccountFirstMirrored = 7_262_005,
  /** One bulk replay of the delivery dead-letter queue at a time across every replica. */
  DeadLetterReplay = 7_262_006,
  /** With a workspace's hash: one backfill of that workspace at a time (`default` keeps Backfill alone). */
  WorkspaceBackfill = 7_262_007,
  /** With a workspace's hash: one import or sweep of that workspace at a time (`default` keeps Sweep alone). */
  WorkspaceSweep = 7_262_008,
  /** With a slot number (0 to IMPORT_CONCURRENCY − 1): held by each import running, so that at most that many run. */
  ImportSlot = 7_262_009,
  /** With a workspace's hash: one removal of that workspace at a time. */
  WorkspaceRemoval = 7_262_010,
  /** One check of the managed webhook subscriptions at a time across every replica. */
  WebhookHealth = 7_262_011,
  /** One look at the objectives at a time: a breach is entered and left once, whatever the replicas. */
  ObjectiveWatch = 7_262_012,
  /** One check of the logical replication publication at a time (LOGICAL_PUBLICATION), at boot. */
  LogicalPublication = 7_262_013,
  /** One worker at a time runs the background data migrations (database/background-migrations/). */
  BackgroundMigrations = 7_262_014,
}

/** A lock's key: one of LockKey, or one of them with a second number (a workspace's hash, a slot). */
export type LockName = LockKey | readonly [LockKey, number];

/** A workspace's part of a two-number lock: a 32-bit hash of its id (a collision only serialises two workspaces). */
export function workspaceLockPart(workspaceId: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < workspaceId.length; i += 1) hash = Math.imul(hash ^ workspaceId.charCodeAt(i), 0x01000193);
  return hash | 0;
}

/** A held session-level advisory lock: it belongs to the connection, which is kept until `release()`. */
export interface HeldLock {
  /** Unlocks and gives the connection back; resolves once it has. */
  release(): Promise<void>;
}

/** Waits for a one-number advisory lock that `trx`'s transaction holds until it ends. */
export async function advisoryXactLock(trx: Db, key: LockKey): Promise<void> {
  await sql`SELECT pg_advisory_xact_lock(${key}::bigint)`.execute(trx);
}

/**
 * Takes `key` without waiting, on a connection of its own held until `release()`; null when another session (another
 * replica) holds it. A replica that dies loses the connection, and the lock with it.
 */
export function tryAdvisoryLock(db: Db, name: LockName): Promise<HeldLock | null> {
  const [key, part] = typeof name === 'number' ? [name, undefined] : name;
  // pg's one-bigint and two-int4 locks are separate spaces: a two-number name never meets a one-number one.
  const lock = part === undefined ? sql`pg_try_advisory_lock(${key}::bigint)` : sql`pg_try_advisory_lock(${key}::int4, ${part}::int4)`;
  const unlock = part === undefined ? sql`pg_advisory_unlock(${key}::bigint)` : sql`pg_advisory_unlock(${key}::int4, ${part}::int4)`;
  return new Promise<HeldLock | null>((resolve, reject) => {
    let answered = false;
    let release!: () => void;
    const released = new Promise<void>((resolveRelease) => (release = resolveRelease));
    const connection = db.connection().execute(async (conn) => {
      const { rows } = await sql<{ ok: boolean }>`SELECT ${lock} AS ok`.execute(conn);
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
      await sql`SELECT ${unlock}`.execute(conn).catch(() => undefined);
    });
    connection.catch((error: unknown) => {
      if (!answered) reject(error instanceof Error ? error : new Error(String(error)));
    });
  });
}
