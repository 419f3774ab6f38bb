import { createHash, randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Logger } from '@nestjs/common';
import type { Pool } from 'pg';

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
  applied: string[];
  alreadyApplied: number;
}

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
  migration_name: string;
  checksum: string;
  finished_at: Date | null;
  rolled_back_at: Date | null;
}

/**
 * Applies pending Prisma migrations at start-up (the Prisma CLI cannot run its engine here), writing the same
 * `_prisma_migrations` rows as `prisma migrate deploy`. Unlike Prisma, each migration runs in a transaction with
 * its bookkeeping row, so a failure leaves nothing half-applied.
 */
export class Migrator {
  private readonly logger = new Logger(Migrator.name);

  constructor(
    private readonly pool: Pool,
    private readonly directory: string,
  ) {}

  async migrate(): Promise<MigrationResult> {
    const migrations = readMigrations(this.directory);
    const client = await this.pool.connect();
    try {
      // Session-level lock: replicas starting together apply each migration once.
      await client.query('SELECT pg_advisory_lock($1)', [PRISMA_ADVISORY_LOCK_KEY]);
      try {
        await client.query(CREATE_MIGRATIONS_TABLE);
        const { rows } = await client.query<AppliedRow>(
          'SELECT migration_name, checksum, finished_at, rolled_back_at FROM "_prisma_migrations" WHERE rolled_back_at IS NULL ORDER BY started_at',
        );
        const applied = this.checkApplied(migrations, rows);
        const pending = migrations.filter((m) => !applied.has(m.name));
        for (const migration of pending) {
          this.logger.log(`Applying migration ${migration.name}`);
          await client.query('BEGIN');
          try {
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
            throw new MigrationError(`Migration ${migration.name} failed: ${(error as Error).message}`);
          }
        }
        if (pending.length === 0) this.logger.log(`Database schema is up to date (${applied.size} migrations)`);
        return { applied: pending.map((m) => m.name), alreadyApplied: applied.size };
      } finally {
        await client.query('SELECT pg_advisory_unlock($1)', [PRISMA_ADVISORY_LOCK_KEY]);
      }
    } finally {
      client.release();
    }
  }

  /** Migration files the database has not finished applying (for readiness: empty once this version's start-up ran). */
  async pending(): Promise<string[]> {
    const { rows } = await this.pool.query<{ migration_name: string }>(
      'SELECT migration_name FROM "_prisma_migrations" WHERE rolled_back_at IS NULL AND finished_at IS NOT NULL',
    );
    const applied = new Set(rows.map((r) => r.migration_name));
    return readMigrations(this.directory)
      .map((m) => m.name)
      .filter((name) => !applied.has(name));
  }

  /** Refuses to go on when the database and the migration files disagree about the past. */
  private checkApplied(migrations: MigrationFile[], rows: AppliedRow[]): Set<string> {
    const byName = new Map(migrations.map((m) => [m.name, m]));
    const applied = new Set<string>();
    for (const row of rows) {
      if (row.finished_at === null) {
        throw new MigrationError(
          `Migration ${row.migration_name} started but never finished. Resolve it (prisma migrate resolve) before starting pozy-sync.`,
        );
      }
      const file = byName.get(row.migration_name);
      if (!file) {
        this.logger.warn(`Migration ${row.migration_name} is applied in the database but has no folder here (newer version?)`);
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
    return applied;
  }
}
