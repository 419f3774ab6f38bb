import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Pool } from 'pg';
import { createApp } from '../src/app.factory';
import { AppConfig } from '../src/config/app-config';
import { MIGRATIONS_DIR } from '../src/database/database.service';
import { migrationChecksum, Migrator, readMigrations } from '../src/database/migrator';
import { createTestDatabase, TestDatabase } from './support/database';
import { startService, waitFor } from './support/service';
import { testLog } from './support/test-log';

interface MigrationRow {
  id: string;
  migration_name: string;
  checksum: string;
  finished_at: Date | null;
  applied_steps_count: number;
}

describe('migrator (Prisma-compatible, applied at start-up)', () => {
  let db: TestDatabase;
  let pool: Pool;
  const rows = async () =>
    (
      await pool.query<MigrationRow>(
        'SELECT id, migration_name, checksum, finished_at, applied_steps_count FROM "_prisma_migrations" ORDER BY started_at',
      )
    ).rows;

  /** A scratch copy of prisma/migrations, for tests that edit or add migration files. */
  let copy: string;

  beforeEach(async () => {
    db = await createTestDatabase('migrator');
    pool = db.pool(4);
    copy = mkdtempSync(join(tmpdir(), 'pozy-migrations-'));
    cpSync(MIGRATIONS_DIR, copy, { recursive: true });
  });

  afterEach(async () => {
    rmSync(copy, { recursive: true, force: true });
    await pool.end();
    await db.drop();
  });

  it('migrates a fresh database on start, as prisma migrate deploy would record it', async () => {
    const service = await startService(db.url);
    await service.close();

    const files = readMigrations(MIGRATIONS_DIR);
    expect(files.length).toBeGreaterThan(0);
    const applied = await rows();
    expect(applied.map((r) => [r.migration_name, r.checksum, r.applied_steps_count])).toEqual(files.map((f) => [f.name, f.checksum, 1]));
    expect(applied.every((r) => r.finished_at instanceof Date)).toBe(true);
    // Prisma's checksum is the SHA-256 of the file as committed.
    const first = readFileSync(join(MIGRATIONS_DIR, files[0].name, 'migration.sql'), 'utf8');
    expect(applied[0].checksum).toBe(migrationChecksum(first));
    expect(applied[0].checksum).toMatch(/^[0-9a-f]{64}$/);
    const { rows: tables } = await pool.query("SELECT to_regclass('public.pozy_event') AS t");
    expect(tables[0].t).toBe('pozy_event');
  });

  it('applies nothing on a second start', async () => {
    await (await startService(db.url)).close();
    const before = await rows();

    await (await startService(db.url)).close();

    expect(await rows()).toEqual(before);
    await expect(new Migrator(pool, MIGRATIONS_DIR).migrate()).resolves.toEqual({
      applied: [],
      alreadyApplied: before.length,
      unknown: [],
    });
  });

  it('applies each migration once when several replicas start together', async () => {
    const results = await Promise.all(Array.from({ length: 4 }, () => new Migrator(pool, MIGRATIONS_DIR).migrate()));

    const files = readMigrations(MIGRATIONS_DIR);
    expect(results.flatMap((r) => r.applied).sort()).toEqual(files.map((f) => f.name).sort());
    expect(await rows()).toHaveLength(files.length);
  });

  it('refuses to start the service when an applied migration has changed since', async () => {
    await (await startService(db.url)).close();
    const [first] = await rows();
    // What an edit of the committed file looks like from the database's side.
    await pool.query('UPDATE "_prisma_migrations" SET checksum = $1 WHERE id = $2', ['0'.repeat(64), first.id]);

    const config = AppConfig.fromEnvironment({ DATABASE_URL: db.url, POZY_API_KEY: 'sk_test_key' });
    await expect(createApp(config, { logDestination: testLog })).rejects.toThrow(
      new RegExp(`Migration ${first.migration_name} was modified after it was applied`),
    );
  });

  it('names the edited file when a migration.sql changes after it was applied', async () => {
    await new Migrator(pool, copy).migrate();
    const [first] = readMigrations(copy);
    writeFileSync(join(copy, first.name, 'migration.sql'), `${first.script}\n-- an afterthought\n`);

    await expect(new Migrator(pool, copy).migrate()).rejects.toThrow(
      /was modified after it was applied .*Restore the original migration\.sql and put the change in a new migration/,
    );
  });

  it('accepts a migration whose line endings git turned into CRLF', async () => {
    await new Migrator(pool, copy).migrate();
    const [first] = readMigrations(copy);
    writeFileSync(join(copy, first.name, 'migration.sql'), first.script.replace(/\n/g, '\r\n'));

    await expect(new Migrator(pool, copy).migrate()).resolves.toMatchObject({ applied: [] });
  });

  it('rolls back a failing migration whole and records nothing for it', async () => {
    const broken = join(copy, '99990101000000_broken');
    cpSync(join(copy, readMigrations(copy)[0].name), broken, { recursive: true });
    writeFileSync(join(broken, 'migration.sql'), 'CREATE TABLE half_done (id int);\nSELECT no_such_function();\n');

    await expect(new Migrator(pool, copy).migrate()).rejects.toThrow(/Migration 99990101000000_broken failed/);
    expect((await rows()).map((r) => r.migration_name)).not.toContain('99990101000000_broken');
    const { rows: tables } = await pool.query("SELECT to_regclass('public.half_done') AS t");
    expect(tables[0].t).toBeNull();
  });

  /** Adds a migration to the scratch copy, after every shipped one. */
  const addMigration = (name: string, script: string) => {
    const dir = join(copy, name);
    mkdirSync(dir);
    writeFileSync(join(dir, 'migration.sql'), script);
  };

  /** A session holding ACCESS SHARE on `scratch` (a long read) until `release()`. */
  async function longRead(): Promise<{ release: () => Promise<void> }> {
    const reader = await pool.connect();
    await reader.query('BEGIN');
    await reader.query('LOCK TABLE scratch IN ACCESS SHARE MODE');
    return {
      release: async () => {
        await reader.query('COMMIT');
        reader.release();
      },
    };
  }

  const insertRow = (id: string) => pool.query('INSERT INTO scratch (id, n) VALUES ($1, 0)', [id]).catch((error: Error) => error);

  /** The shipped migrations applied, and a table of the test's own for the added ones to alter. */
  async function migratedWithScratch(): Promise<void> {
    await new Migrator(pool, copy).migrate();
    await pool.query('CREATE TABLE scratch (id text PRIMARY KEY, n int)');
  }

  it('never queues writes behind a lock it waits for: a long read holds, writes go on, the migration gets its lock once the read ends', async () => {
    await migratedWithScratch();
    addMigration('99990101000000_lock_hungry', 'ALTER TABLE scratch ADD COLUMN lock_hungry int;\n');
    const read = await longRead();

    // Without a lock_timeout, this ALTER would wait for the read, and every write to scratch would wait behind it.
    const migrating = new Migrator(pool, copy, { lockTimeoutMs: 200, lockRetries: 1_000 }).migrate();
    await waitFor('the migration to ask for its lock', async () => {
      const { rows: waiting } = await pool.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE query LIKE 'ALTER TABLE scratch ADD COLUMN lock_hungry%' AND wait_event_type = 'Lock'",
      );
      return waiting[0].n > 0 ? true : undefined;
    });
    // A write while the read still holds its lock: it completes, between two of the migration's attempts.
    const written = await insertRow('during-read');
    expect(written).not.toBeInstanceOf(Error);
    await read.release();

    await expect(migrating).resolves.toMatchObject({ applied: ['99990101000000_lock_hungry'] });
    const { rows: columns } = await pool.query(
      "SELECT 1 FROM information_schema.columns WHERE table_name = 'scratch' AND column_name = 'lock_hungry'",
    );
    expect(columns).toHaveLength(1);
  });

  it('gives up after its retries while the lock stays taken, naming why, and records nothing', async () => {
    await migratedWithScratch();
    addMigration('99990101000000_lock_hungry', 'ALTER TABLE scratch ADD COLUMN lock_hungry int;\n');
    const read = await longRead();
    try {
      await expect(new Migrator(pool, copy, { lockTimeoutMs: 100, lockRetries: 1 }).migrate()).rejects.toThrow(
        /Migration 99990101000000_lock_hungry failed \(no lock within 100 ms, 2 times\)/,
      );
    } finally {
      await read.release();
    }
    expect((await rows()).map((r) => r.migration_name)).not.toContain('99990101000000_lock_hungry');
  });

  it('builds an index CONCURRENTLY outside a transaction, and resumes it after a failure, rebuilding the index it left invalid', async () => {
    await migratedWithScratch();
    await pool.query("INSERT INTO scratch (id, n) VALUES ('twin-1', 1), ('twin-2', 1)");
    const script = [
      '-- One statement at a time: CREATE INDEX CONCURRENTLY cannot run in a transaction.',
      'CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS scratch_n_once ON scratch (n);',
      'CREATE INDEX CONCURRENTLY IF NOT EXISTS scratch_n_again ON scratch (n, id);',
      '',
    ].join('\n');
    addMigration('99990101000000_concurrent', script);

    // Two posts share n: the unique build fails and leaves scratch_n_once behind, invalid; the migration stays unfinished.
    await expect(new Migrator(pool, copy).migrate()).rejects.toThrow(/Migration 99990101000000_concurrent failed/);
    const unfinished = (await rows()).find((r) => r.migration_name === '99990101000000_concurrent');
    expect(unfinished?.finished_at).toBeNull();
    const validity = async () =>
      (
        await pool.query<{ name: string; valid: boolean }>(
          "SELECT c.relname AS name, i.indisvalid AS valid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname LIKE 'scratch_n_%' ORDER BY 1",
        )
      ).rows;
    expect(await validity()).toEqual([{ name: 'scratch_n_once', valid: false }]);

    // The data mended, the next run resumes it: the invalid index dropped and built again, the rest applied.
    await pool.query("DELETE FROM scratch WHERE id = 'twin-2'");
    await expect(new Migrator(pool, copy).migrate()).resolves.toMatchObject({ applied: ['99990101000000_concurrent'] });
    expect(await validity()).toEqual([
      { name: 'scratch_n_again', valid: true },
      { name: 'scratch_n_once', valid: true },
    ]);
    const done = (await rows()).filter((r) => r.migration_name === '99990101000000_concurrent');
    expect(done).toHaveLength(1);
    expect(done[0].finished_at).toBeInstanceOf(Date);
  });

  it('reports migrations the database has and this release does not ship (a rollback), and runs on', async () => {
    await new Migrator(pool, copy).migrate();
    addMigration('99990101000000_newer', 'CREATE TABLE newer_release (id int);\n');
    await new Migrator(pool, copy).migrate();
    rmSync(join(copy, '99990101000000_newer'), { recursive: true });

    await expect(new Migrator(pool, copy).migrate()).resolves.toMatchObject({ applied: [], unknown: ['99990101000000_newer'] });
    await expect(new Migrator(pool, copy).status()).resolves.toEqual({ pending: [], unknown: ['99990101000000_newer'] });
  });
});
