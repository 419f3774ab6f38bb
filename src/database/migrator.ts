import { createHash, randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Logger } from '@nestjs/common';
import type { Pool, PoolClient } from 'pg';
import { splitStatements } from './sql-statements';

/** The key `prisma migrate` locks with, so that it and this migrator never run at the same time. */
const PRISMA_ADVISORY_LOCK_KEY = 72707369;

/** Same table as Prisma's schema engine creates, so `prisma migrate status/deploy` agree with us. */
const CREATE_MIGRATIONS_TABLE = `
CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
    "id"                    VARCHAR(36) PRIMARY KEY NOT NULL,
    "checksum"              VARCHAR(64) NOT NULL,
    "finished_at"           TIMESTAMPTZ,
    "migration_name"        VARCHAR(255) NOT NULL,
    "logs"                  TEXT,
    "rolled_back_at"        TIMESTAMPTZ,
    "started_at"            TIMESTAMPTZ NOT NULL DEFAULT now(),
    "applied_steps_count"   INTEGER NOT NULL DEFAULT 0
)`;

export interface MigrationFile {
  name: string;
  script: string;
  checksum: string;
}

export interface MigrationResult {
  /** Applied by this run, in order. */
  applied: string[];
  alreadyApplied: number;
  /** Applied in the database but not shipped by this release (a newer release's): reported, never refused. */
  unknown: string[];
}

export interface MigratorOptions {
  /** Each statement's `lock_timeout`: a migration waiting longer for a lock gives up rather than queue writes behind it. */
  lockTimeoutMs: number;
  /** Times a migration (or, outside a transaction, a statement) whose lock wait ran out is tried again: after 1 s, 2 s, 4 s, … */
  lockRetries: number;
}

/** As MIGRATION_LOCK_TIMEOUT_MS's meaning says: 1, 2, 4, 8 and 16 s apart, half a minute of retries in all. */
export const MIGRATION_LOCK_RETRIES = 5;
export const DEFAULT_MIGRATOR_OPTIONS: MigratorOptions = { lockTimeoutMs: 5_000, lockRetries: MIGRATION_LOCK_RETRIES };

/** lock_not_available: lock_timeout ran out. */
const LOCK_NOT_AVAILABLE = '55P03';

export class MigrationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MigrationError';
  }
}

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

/** Prisma's checksum: SHA-256 of the script. A match under either line ending counts, as in Prisma, since git may rewrite them. */
export function migrationChecksum(script: string): string {
  return sha256(script);
}

function matchesChecksum(script: string, checksum: string): boolean {
  return [script, script.replace(/\r\n/g, '\n'), script.replace(/(?<!\r)\n/g, '\r\n')].some((s) => sha256(s) === checksum);
}

/**
 * A migration that builds or drops an index `CONCURRENTLY` runs outside a transaction (PostgreSQL refuses it inside
 * one), statement by statement; every other migration runs whole in one transaction with its bookkeeping row.
 */
export function runsOutsideTransaction(script: string): boolean {
  return splitStatements(script).some((statement) => /\bCONCURRENTLY\b/i.test(statement.replace(/--[^\n]*/g, '')));
}

/** The index a `CREATE [UNIQUE] INDEX CONCURRENTLY [IF NOT EXISTS] name` builds, unquoted; undefined for another statement. */
export function concurrentIndexName(statement: string): string | undefined {
  const match = /^\s*CREATE\s+(?:UNIQUE\s+)?INDEX\s+CONCURRENTLY\s+(?:IF\s+NOT\s+EXISTS\s+)?("(?:[^"]|"")+"|[A-Za-z_][A-Za-z0-9_$]*)/i.exec(
    statement.replace(/--[^\n]*/g, ''),
  );
  if (!match) return undefined;
  const name = match[1];
  return name.startsWith('"') ? name.slice(1, -1).replace(/""/g, '"') : name.toLowerCase();
}

/** Reads `prisma/migrations/<name>/migration.sql` folders in name order, as Prisma does. */
export function readMigrations(directory: string): MigrationFile[] {
  return readdirSync(directory, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && existsSync(join(directory, entry.name, 'migration.sql')))
    .map((entry) => entry.name)
    .sort()
    .map((name) => {
      const script = readFileSync(join(directory, name, 'migration.sql'), 'utf8');
      return { name, script, checksum: migrationChecksum(script) };
    });
}

interface AppliedRow {
  id: string;
  migration_name: string;
  checksum: string;
  finished_at: Date | null;
  rolled_back_at: Date | null;
}

/**
 * Applies pending Prisma migrations (at start-up unless MIGRATE_ON_START=false, or as `npm run migrate`), writing the
 * same `_prisma_migrations` rows as `prisma migrate deploy` (the Prisma CLI cannot run its engine here). Online:
 * every statement waits at most `lockTimeoutMs` for its locks, and a migration that times out is tried again
 * (`lockRetries` times, backing off), so a long read never turns into a queue of writes blocked behind the
 * migration's lock request. A migration runs in one transaction with its bookkeeping row, so a failure leaves nothing
 * half-applied; one that builds or drops indexes `CONCURRENTLY` runs statement by statement instead, and is resumed
 * after a crash by running it again (its statements are written to be re-run: test/migration-lint.e2e-spec.ts).
 */
/** How often a process waiting for another's migrations tries their lock again. */
const LOCK_POLL_MS = 200;

export class Migrator {
  private readonly logger = new Logger(Migrator.name);

  constructor(
    private readonly pool: Pool,
    private readonly directory: string,
    private readonly options: MigratorOptions = DEFAULT_MIGRATOR_OPTIONS,
  ) {}

  /**
   * Takes the migrations' advisory lock, trying again every LOCK_POLL_MS while another process holds it. Not
   * `pg_advisory_lock`: a session waiting in it holds a snapshot, a `CREATE INDEX CONCURRENTLY` run by the lock's holder
   * waits for every older snapshot to end, and the two deadlock. Between tries this session holds none.
   */
  private async lock(client: PoolClient): Promise<void> {
    let told = false;
    for (;;) {
      const { rows } = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1) AS locked', [PRISMA_ADVISORY_LOCK_KEY]);
      if (rows[0].locked) return;
      if (!told) this.logger.log('Another process is applying migrations: waiting for it');
      told = true;
      await new Promise((resolve) => setTimeout(resolve, LOCK_POLL_MS));
    }
  }

  async migrate(): Promise<MigrationResult> {
    const migrations = readMigrations(this.directory);
    const client = await this.pool.connect();
    try {
      // Session-level lock: replicas (or a migration job) starting together apply each migration once.
      await this.lock(client);
      try {
        await client.query(CREATE_MIGRATIONS_TABLE);
        const { rows } = await client.query<AppliedRow>(
          'SELECT id, migration_name, checksum, finished_at, rolled_back_at FROM "_prisma_migrations" WHERE rolled_back_at IS NULL ORDER BY started_at',
        );
        const { applied, unknown, unfinished } = this.checkApplied(migrations, rows);
        if (unknown.length > 0) {
          this.logger.warn(
            `The database has ${unknown.length} migration(s) this release does not ship (a newer release's, e.g. ${unknown[unknown.length - 1]}): ` +
              'running on a newer schema, as a rollback does; see CHANGELOG.md for the releases it allows',
          );
        }
        const pending = migrations.filter((m) => !applied.has(m.name));
        for (const migration of pending) {
          const began = Date.now();
          const outside = runsOutsideTransaction(migration.script);
          this.logger.log(`Applying migration ${migration.name}${outside ? ' (outside a transaction: CONCURRENTLY)' : ''}`);
          if (outside) await this.applyOutsideTransaction(client, migration, unfinished.get(migration.name));
          else await this.withLockRetries(migration.name, () => this.applyInTransaction(client, migration));
          this.logger.log(`Applied migration ${migration.name} in ${Date.now() - began} ms`);
        }
        if (pending.length === 0) this.logger.log(`Database schema is up to date (${applied.size} migrations)`);
        return { applied: pending.map((m) => m.name), alreadyApplied: applied.size, unknown };
      } finally {
        await client.query('SELECT pg_advisory_unlock($1)', [PRISMA_ADVISORY_LOCK_KEY]);
      }
    } finally {
      client.release();
    }
  }

  private async applyInTransaction(client: PoolClient, migration: MigrationFile): Promise<void> {
    await client.query('BEGIN');
    try {
      await client.query(`SET LOCAL lock_timeout = ${this.options.lockTimeoutMs}`);
      const id = randomUUID();
      await client.query(
        'INSERT INTO "_prisma_migrations" (id, checksum, migration_name, started_at, applied_steps_count) VALUES ($1, $2, $3, now(), 0)',
        [id, migration.checksum, migration.name],
      );
      await client.query(migration.script);
      await client.query('UPDATE "_prisma_migrations" SET finished_at = now(), applied_steps_count = 1 WHERE id = $1', [id]);
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK');
      throw error;
    }
  }

  /**
   * Its bookkeeping row first (so a crash midway is seen as unfinished and resumed), then each statement on its own,
   * each with its own lock retries. An index a `CREATE INDEX CONCURRENTLY` left invalid (a lock timeout, a crash, a
   * duplicate) is dropped before the statement runs again, since `IF NOT EXISTS` would keep it.
   */
  private async applyOutsideTransaction(client: PoolClient, migration: MigrationFile, resumedId: string | undefined): Promise<void> {
    const id = resumedId ?? randomUUID();
    if (resumedId) this.logger.warn(`Resuming migration ${migration.name}, which started but never finished (its statements run again)`);
    else
      await client.query(
        'INSERT INTO "_prisma_migrations" (id, checksum, migration_name, started_at, applied_steps_count) VALUES ($1, $2, $3, now(), 0)',
        [id, migration.checksum, migration.name],
      );
    await client.query(`SET lock_timeout = ${this.options.lockTimeoutMs}`);
    try {
      for (const statement of splitStatements(migration.script)) {
        const index = concurrentIndexName(statement);
        await this.withLockRetries(migration.name, async () => {
          if (index !== undefined) await this.dropInvalidIndex(client, index);
          await client.query(statement);
        });
      }
    } finally {
      await client.query('RESET lock_timeout');
    }
    await client.query('UPDATE "_prisma_migrations" SET finished_at = now(), applied_steps_count = 1 WHERE id = $1', [id]);
  }

  private async dropInvalidIndex(client: PoolClient, name: string): Promise<void> {
    const { rows } = await client.query<{ invalid: boolean }>(
      `SELECT NOT i.indisvalid AS invalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
        WHERE c.relname = $1 AND c.relnamespace = current_schema()::regnamespace`,
      [name],
    );
    if (rows[0]?.invalid) {
      this.logger.warn(`Dropping index ${name}, left invalid by an earlier attempt, before building it again`);
      await client.query(`DROP INDEX CONCURRENTLY IF EXISTS "${name.replace(/"/g, '""')}"`);
    }
  }

  private async withLockRetries(name: string, attempt: () => Promise<void>): Promise<void> {
    for (let tried = 0; ; tried += 1) {
      try {
        await attempt();
        return;
      } catch (error) {
        const code = (error as { code?: unknown }).code;
        if (code === LOCK_NOT_AVAILABLE && tried < this.options.lockRetries) {
          const waitMs = 1_000 * 2 ** tried;
          this.logger.warn(`Migration ${name} waited over ${this.options.lockTimeoutMs} ms for a lock; trying again in ${waitMs} ms`);
          await new Promise((resolve) => setTimeout(resolve, waitMs));
          continue;
        }
        const why = code === LOCK_NOT_AVAILABLE ? ` (no lock within ${this.options.lockTimeoutMs} ms, ${tried + 1} times)` : '';
        throw new MigrationError(`Migration ${name} failed${why}: ${(error as Error).message}`);
      }
    }
  }

  /** Migration files the database has not finished applying (for readiness: empty once this version's start-up ran). */
  async pending(): Promise<string[]> {
    return (await this.status()).pending;
  }

  /** What this release ships that the database lacks (`pending`), and what the database has that it does not (`unknown`). */
  async status(): Promise<{ pending: string[]; unknown: string[] }> {
    const { rows } = await this.pool
      .query<{ migration_name: string }>('SELECT migration_name FROM "_prisma_migrations" WHERE rolled_back_at IS NULL AND finished_at IS NOT NULL')
      .catch((error: unknown) => {
        // A database nothing was ever applied to: everything is pending.
        if ((error as { code?: unknown }).code === '42P01') return { rows: [] };
        throw error;
      });
    const applied = new Set(rows.map((r) => r.migration_name));
    const shipped = readMigrations(this.directory).map((m) => m.name);
    const known = new Set(shipped);
    return { pending: shipped.filter((name) => !applied.has(name)), unknown: [...applied].filter((name) => !known.has(name)).sort() };
  }

  /** Refuses to go on when the database and the migration files disagree about the past. */
  private checkApplied(
    migrations: MigrationFile[],
    rows: AppliedRow[],
  ): { applied: Set<string>; unknown: string[]; unfinished: Map<string, string> } {
    const byName = new Map(migrations.map((m) => [m.name, m]));
    const applied = new Set<string>();
    const unknown: string[] = [];
    const unfinished = new Map<string, string>();
    for (const row of rows) {
      const file = byName.get(row.migration_name);
      if (row.finished_at === null) {
        // One that runs outside a transaction is written to be run again; any other was not ours to leave half-done.
        if (file && runsOutsideTransaction(file.script) && matchesChecksum(file.script, row.checksum)) {
          unfinished.set(row.migration_name, row.id);
          continue;
        }
        throw new MigrationError(
          `Migration ${row.migration_name} started but never finished. Resolve it (prisma migrate resolve) before starting pozy-sync.`,
        );
      }
      if (!file) {
        unknown.push(row.migration_name);
        continue;
      }
      if (!matchesChecksum(file.script, row.checksum)) {
        throw new MigrationError(
          `Migration ${row.migration_name} was modified after it was applied (checksum ${row.checksum} in the database, ` +
            `${file.checksum} on disk). Restore the original migration.sql and put the change in a new migration.`,
        );
      }
      applied.add(row.migration_name);
    }
    return { applied, unknown, unfinished };
  }
}
