import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Pool } from 'pg';
import { createApp } from '../src/app.factory';
import { AppConfig } from '../src/config/app-config';
import { MIGRATIONS_DIR } from '../src/database/database.service';
import { migrationChecksum, Migrator, readMigrations } from '../src/database/migrator';
import { createTestDatabase, TestDatabase } from './support/database';
import { startService } from './support/service';
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
});
