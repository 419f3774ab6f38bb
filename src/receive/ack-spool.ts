import { randomUUID } from 'node:crypto';
import { chmodSync, closeSync, mkdirSync, openSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import Database from 'better-sqlite3';
import { WakeableLoop } from '../common/wakeable-loop';
import { AppConfig } from '../config/app-config';
import { PrimaryWatch } from '../database/primary-watch';
import { AckTimeoutError } from './ack-deadline';
import { isEventDataError } from './event-data-error';
import { eventKey, NewPozyEvent, PozyEventRepository } from './pozy-event.repository';
import { ReconcileSignal } from './reconcile-signal';
import { DEFAULT_WORKSPACE } from '../common/workspace-id';

export { AckTimeoutError, withDeadline } from './ack-deadline';

/** A network timeout, ours or pg's (connect or query): what the acknowledgment dead-letter rule counts. */
export function isTimeout(error: unknown): boolean {
  return error instanceof AckTimeoutError || /timeout|timed out/i.test((error as Error)?.message ?? '');
}

export interface SpooledEvent {
  id: string;
  /** The workspace whose path received it. */
  workspaceId: string;
  eventId: string;
  eventType: string;
  spooledAt: Date;
  attempts: number;
  nextAttemptAt: Date | null;
  firstTimeoutAt: Date | null;
  lastError: string;
  state: 'pending' | 'dead';
  deadAt: Date | null;
}

/** Where a dead letter stands in a bulk replay's walk. */
export interface DeadPosition {
  id: string;
  deadAt: number;
}

interface Row {
  id: string;
  workspace_id: string;
  event_id: string;
  event: string;
  spooled_at: number;
  attempts: number;
  next_attempt_at: number | null;
  first_timeout_at: number | null;
  last_error: string;
  state: 'pending' | 'dead';
  dead_at: number | null;
}

/** The spool's table: an event once per workspace and id, however many times it is spooled. */
const SPOOLED_COLUMNS = `
  id TEXT PRIMARY KEY, workspace_id TEXT NOT NULL, event_id TEXT NOT NULL, event TEXT NOT NULL, spooled_at INTEGER NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0, next_attempt_at INTEGER, first_timeout_at INTEGER, last_error TEXT NOT NULL,
  state TEXT NOT NULL DEFAULT 'pending', dead_at INTEGER, UNIQUE (workspace_id, event_id)`;
/** The columns a spool of a version before workspaces had, copied as they are when it is upgraded. */
const SPOOLED_COPIED = [
  'id',
  'event_id',
  'event',
  'spooled_at',
  'attempts',
  'next_attempt_at',
  'first_timeout_at',
  'last_error',
  'state',
  'dead_at',
] as const;

const BATCH = 200;
/** The spool holds whole event payloads: its directory and files are its owner's alone, whatever the umask. */
const PRIVATE_DIRECTORY = 0o700;
const PRIVATE_FILE = 0o600;
const DATABASE_FILE = 'spool.sqlite';
/** SQLite's own files beside the database in WAL mode. */
const WAL_FILES = [`${DATABASE_FILE}-wal`, `${DATABASE_FILE}-shm`];
const date = (ms: number | null) => (ms === null ? null : new Date(ms));

/**
 * The acknowledgment spool: events the database did not acknowledge in time are written here (SQLite, WAL, fsync on every
 * commit) and answered 2xx, so an accepted event is never lost. Each is retried against the database after
 * SPOOL_RETRY_FIRST_MS (10 s), then every SPOOL_RETRY_SECOND_MS (20 min), with the same idempotent insert; when its
 * failures are network timeouts that have lasted over DEAD_LETTER_AFTER_MS (60 s), it moves to the acknowledgment
 * dead-letter queue, which stays here (the database is what is unreachable) until an operator replays it.
 *
 * That schedule is for a database that keeps failing. When PrimaryWatch finds a writable primary again after none
 * (a failover, a restart, an outage), everything pending is due at once and drained in the order it was spooled:
 * the cause of the failures is known to be gone, and waiting out a 20-minute retry would leave accepted events out
 * of the mirror for nothing.
 */
@Injectable()
export class AckSpool implements OnModuleInit, OnApplicationBootstrap, BeforeApplicationShutdown, OnApplicationShutdown {
  private readonly logger = new Logger(AckSpool.name);
  private db!: Database.Database;
  /** This spool's id, made when it was first opened and kept in it. */
  spoolId!: string;
  private stopped = false;
  /** Retries when the earliest pending record is due; with nothing pending, nothing runs (no idle polling). */
  private readonly retries: WakeableLoop;

  constructor(
    private readonly config: AppConfig,
    private readonly events: PozyEventRepository,
    private readonly reconcileSignal: ReconcileSignal,
    private readonly primary: PrimaryWatch,
  ) {
    this.retries = new WakeableLoop({
      pass: () => this.retryPass(),
      idleMs: Infinity,
      retryMs: config.spoolRetrySecondMs,
      logger: this.logger,
      what: 'Looking for spooled events to retry',
    });
    primary.onWritable((change) => this.drainNow(`a writable primary again (${change.kind})`));
  }

  onModuleInit(): void {
    const dir = this.config.spoolDir;
    // Parents as the umask makes them (another user may need to traverse them); the spool directory private.
    mkdirSync(dirname(dir), { recursive: true });
    mkdirSync(dir, { recursive: true, mode: PRIVATE_DIRECTORY });
    this.makePrivate(dir, PRIVATE_DIRECTORY);
    const file = join(dir, DATABASE_FILE);
    // SQLite creates its -wal and -shm files with the database file's mode: that one is created private first.
    closeSync(openSync(file, 'a', PRIVATE_FILE));
    for (const name of [DATABASE_FILE, ...WAL_FILES]) this.makePrivate(join(dir, name), PRIVATE_FILE);
    this.db = new Database(file);
    this.db.pragma('journal_mode = WAL');
    // FULL: a commit is on disk before the webhook is answered.
    this.db.pragma('synchronous = FULL');
    this.db.exec(`CREATE TABLE IF NOT EXISTS spooled (${SPOOLED_COLUMNS})`);
    this.upgrade();
    // A bulk replay walks the dead letters by (dead_at, id).
    this.db.exec(`CREATE INDEX IF NOT EXISTS spooled_dead ON spooled (dead_at, id) WHERE state = 'dead'`);
    // The spool's own id, kept with it: which replica's spool a bulk replay of the ack queue works on.
    this.db.exec(`CREATE TABLE IF NOT EXISTS spool_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`);
    this.db.prepare(`INSERT OR IGNORE INTO spool_meta (key, value) VALUES ('spool_id', ?)`).run(randomUUID());
    this.spoolId = (this.db.prepare(`SELECT value FROM spool_meta WHERE key = 'spool_id'`).get() as { value: string }).value;
    for (const name of WAL_FILES) this.makePrivate(join(dir, name), PRIVATE_FILE);
  }

  /**
   * A spool of a version before workspaces keys its events by id alone: its table is rebuilt, in one transaction,
   * with every event its default workspace's, so that two workspaces' events of one id are both kept.
   */
  private upgrade(): void {
    const columns = this.db.prepare(`SELECT name FROM pragma_table_info('spooled')`).all() as Array<{ name: string }>;
    if (columns.some((column) => column.name === 'workspace_id')) return;
    const kept = SPOOLED_COPIED.join(', ');
    this.db.transaction(() => {
      this.db.exec(`CREATE TABLE spooled_by_workspace (${SPOOLED_COLUMNS})`);
      this.db.exec(`INSERT INTO spooled_by_workspace (workspace_id, ${kept}) SELECT '${DEFAULT_WORKSPACE}', ${kept} FROM spooled`);
      this.db.exec(`DROP TABLE spooled`);
      this.db.exec(`ALTER TABLE spooled_by_workspace RENAME TO spooled`);
    })();
    this.logger.log('Spool upgraded: its events are keyed by workspace and id, the ones it held the default workspace’s');
  }

  /** Takes group and other access away from a spool path an older version (or a looser umask) left open, saying so. */
  private makePrivate(path: string, mode: number): void {
    let current: number;
    try {
      current = statSync(path).mode & 0o777;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw error;
    }
    if ((current & ~mode) === 0) return;
    const octal = (bits: number) => bits.toString(8).padStart(4, '0');
    try {
      chmodSync(path, mode);
      this.logger.warn(`Made ${path} private (${octal(current)} to ${octal(mode)}): the spool holds whole event payloads`);
    } catch (error) {
      // Refusing to start would refuse Pozy's deliveries too; the operator is told instead.
      this.logger.error(`Could not make ${path} private (${octal(current)}): ${(error as Error).message}; other users can read its event payloads`);
    }
  }

  /** Drains what an earlier run left here at once (not at its next retry), then keeps retrying on schedule. */
  onApplicationBootstrap(): void {
    this.drainNow('left by an earlier run');
    this.retries.start(0);
  }

  /** Makes every pending event due now and wakes the retries: the database is known to take them again. */
  private drainNow(why: string): void {
    if (this.stopped || !this.db?.open) return;
    const { changes } = this.db.prepare(`UPDATE spooled SET next_attempt_at = ? WHERE state = 'pending'`).run(Date.now());
    if (changes > 0) this.logger.log(`Draining ${changes} spooled event(s) now: ${why}`);
    this.retries.wake();
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopped = true;
    await this.retries.stop();
  }

  /** After HTTP has closed: no request can spool any more. */
  onApplicationShutdown(): void {
    this.db?.close();
  }

  /** Stores events durably before the webhook is answered; a second copy of an event spooled already is ignored. */
  add(events: readonly NewPozyEvent[], cause: unknown): void {
    const now = Date.now();
    const insert = this.db.prepare(
      `INSERT OR IGNORE INTO spooled (id, workspace_id, event_id, event, spooled_at, next_attempt_at, first_timeout_at, last_error)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    const message = cause instanceof Error ? cause.message : String(cause);
    this.db.transaction(() => {
      for (const event of events) {
        insert.run(
          randomUUID(),
          event.workspaceId,
          event.id,
          JSON.stringify(event),
          now,
          now + this.config.spoolRetryFirstMs,
          isTimeout(cause) ? now : null,
          message,
        );
      }
    })();
    this.logger.warn(`Spooled ${events.length} event(s): ${message}`);
    this.retries.wakeAt(now + this.config.spoolRetryFirstMs);
    // The database did not take them: if a failover is why, the watch notices now, and the drain follows its end.
    this.primary.wake();
  }

  counts(): { pending: number; dead: number } {
    const rows = this.db.prepare('SELECT state, count(*) AS n FROM spooled GROUP BY state').all() as Array<{ state: string; n: number }>;
    const of = (state: string) => rows.find((r) => r.state === state)?.n ?? 0;
    return { pending: of('pending'), dead: of('dead') };
  }

  /** When the oldest event still waiting for the database was spooled; null when none waits. */
  oldestPendingAt(): Date | null {
    const { oldest } = this.db.prepare(`SELECT min(spooled_at) AS oldest FROM spooled WHERE state = 'pending'`).get() as { oldest: number | null };
    return oldest === null ? null : new Date(oldest);
  }

  /** The acknowledgment dead-letter queue, newest first. */
  dead(limit: number): SpooledEvent[] {
    return (this.db.prepare(`SELECT * FROM spooled WHERE state = 'dead' ORDER BY dead_at DESC, id LIMIT ?`).all(limit) as Row[]).map(toSpooled);
  }

  /** How many letters the acknowledgment dead-letter queue holds (dead up to `upTo`, ms). */
  countDead(upTo = Number.MAX_SAFE_INTEGER): number {
    return (this.db.prepare(`SELECT count(*) AS n FROM spooled WHERE state = 'dead' AND dead_at <= ?`).get(upTo) as { n: number }).n;
  }

  /**
   * A bulk replay's next batch of dead letters, oldest first after `after` in (dead_at, id) order and dead up to
   * `upTo`: at most `limit` of them, and no more than `maxBytes` of events together (always at least one), so a
   * batch of large events stays small in memory. Only ids and positions: the replay reads each event itself.
   */
  deadPage(after: DeadPosition | null, upTo: number, limit: number, maxBytes: number): DeadPosition[] {
    const rows = this.db
      .prepare(
        `SELECT id, dead_at AS deadAt, length(CAST(event AS BLOB)) AS bytes FROM spooled
         WHERE state = 'dead' AND dead_at <= ? AND (dead_at, id) > (?, ?) ORDER BY dead_at, id LIMIT ?`,
      )
      .all(upTo, after?.deadAt ?? -1, after?.id ?? '', limit) as Array<DeadPosition & { bytes: number }>;
    const page: DeadPosition[] = [];
    let bytes = 0;
    for (const row of rows) {
      if (page.length > 0 && bytes + row.bytes > maxBytes) break;
      bytes += row.bytes;
      page.push({ id: row.id, deadAt: row.deadAt });
    }
    return page;
  }

  getDead(id: string): SpooledEvent | undefined {
    const row = this.db.prepare(`SELECT * FROM spooled WHERE id = ? AND state = 'dead'`).get(id) as Row | undefined;
    return row && toSpooled(row);
  }

  /** Inserts dead-lettered records now (the same idempotent insert); resolves how many were new in the store. */
  async replay(ids: readonly string[]): Promise<{ stored: number; duplicates: number }> {
    const rows = ids
      .map((id) => this.db.prepare(`SELECT * FROM spooled WHERE id = ? AND state = 'dead'`).get(id) as Row | undefined)
      .filter((row): row is Row => row !== undefined);
    let stored = 0;
    for (let i = 0; i < rows.length; i += BATCH) stored += await this.insert(rows.slice(i, i + BATCH));
    return { stored, duplicates: rows.length - stored };
  }

  /** One pass of the retry loop: retries what is due, then answers when the next pending record is (null: none). */
  private async retryPass(): Promise<number | null> {
    await this.retryDue().catch((error: unknown) => this.logger.error(`Spool retry failed: ${(error as Error).message}`));
    if (this.stopped || !this.db.open) return null;
    const next = this.db.prepare(`SELECT min(next_attempt_at) AS next FROM spooled WHERE state = 'pending'`).get() as {
      next: number | null;
    };
    return next.next;
  }

  private async retryDue(): Promise<void> {
    for (;;) {
      const rows = this.db
        // In the order they were accepted: a later event of a post is not stored before an earlier one.
        .prepare(`SELECT * FROM spooled WHERE state = 'pending' AND next_attempt_at <= ? ORDER BY spooled_at, rowid LIMIT ?`)
        .all(Date.now(), BATCH) as Row[];
      if (rows.length === 0 || this.stopped) return;
      try {
        const inserted = await this.insert(rows);
        this.logger.log(`Stored ${rows.length} spooled event(s) in the database (${rows.length - inserted} were there already)`);
      } catch (error) {
        if (!isEventDataError(error)) {
          this.failed(rows, error);
          return;
        }
        // One event PostgreSQL refuses must not hold the others back: one by one, and the refused one is set aside.
        for (const row of rows) await this.insert([row]).catch((e: unknown) => (isEventDataError(e) ? this.refused(row, e) : this.failed([row], e)));
      }
    }
  }

  /** The same insert as a delivery: a record whose insert did commit before (a late acknowledgment) adds nothing. */
  private async insert(rows: Row[]): Promise<number> {
    const events = rows.map((row) => reviveEvent(row.event));
    const outcome = await this.events.insertBatch(events, this.config.reconcileCoalesceWindowMs, this.config.ackTimeoutMs);
    if (outcome.firstRequestDueAt) this.reconcileSignal.requested(outcome.firstRequestDueAt);
    const remove = this.db.prepare('DELETE FROM spooled WHERE id = ?');
    this.db.transaction(() => rows.forEach((row) => remove.run(row.id)))();
    return events.filter((e) => outcome.inserted.has(eventKey(e))).length;
  }

  /** PostgreSQL refuses this event's data: no retry can store it. Kept in the dead-letter queue with the reason. */
  private refused(row: Row, error: unknown): void {
    this.db
      .prepare(`UPDATE spooled SET state = 'dead', dead_at = ?, next_attempt_at = NULL, last_error = ?, attempts = attempts + 1 WHERE id = ?`)
      .run(Date.now(), `refused by PostgreSQL: ${(error as Error).message}`, row.id);
    this.logger.error(`Spooled event ${row.event_id} refused by PostgreSQL: ${(error as Error).message}`);
  }

  private failed(rows: Row[], error: unknown): void {
    const now = Date.now();
    const message = error instanceof Error ? error.message : String(error);
    const timeout = isTimeout(error);
    const update = this.db.prepare(
      `UPDATE spooled SET attempts = ?, next_attempt_at = ?, first_timeout_at = ?, last_error = ?, state = ?, dead_at = ? WHERE id = ?`,
    );
    let dead = 0;
    this.db.transaction(() => {
      for (const row of rows) {
        const firstTimeoutAt = timeout ? (row.first_timeout_at ?? now) : null;
        const expired = firstTimeoutAt !== null && now - firstTimeoutAt > this.config.deadLetterAfterMs;
        if (expired) dead += 1;
        update.run(
          row.attempts + 1,
          expired ? null : now + this.config.spoolRetrySecondMs,
          firstTimeoutAt,
          message,
          expired ? 'dead' : 'pending',
          expired ? now : null,
          row.id,
        );
      }
    })();
    this.logger.warn(`Spooled events still not stored (${message}); ${dead} moved to the acknowledgment dead-letter queue`);
  }
}

function reviveEvent(json: string): NewPozyEvent {
  const event = JSON.parse(json) as Omit<NewPozyEvent, 'workspaceId' | 'traceParent'> & {
    workspaceId?: string;
    timestamp: string;
    traceParent?: string | null;
  };
  // Spooled by a version that mirrored one workspace (the default one's), or before traces.
  return {
    ...event,
    workspaceId: event.workspaceId ?? DEFAULT_WORKSPACE,
    timestamp: new Date(event.timestamp),
    traceParent: event.traceParent ?? null,
  };
}

function toSpooled(row: Row): SpooledEvent {
  const event = JSON.parse(row.event) as { type: string };
  return {
    id: row.id,
    workspaceId: row.workspace_id,
    eventId: row.event_id,
    eventType: event.type,
    spooledAt: new Date(row.spooled_at),
    attempts: row.attempts,
    nextAttemptAt: date(row.next_attempt_at),
    firstTimeoutAt: date(row.first_timeout_at),
    lastError: row.last_error,
    state: row.state,
    deadAt: date(row.dead_at),
  };
}
