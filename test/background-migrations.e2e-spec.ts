import { sql } from 'kysely';
import type { Pool } from 'pg';
import { AppConfig } from '../src/config/app-config';
import { BackgroundMigration } from '../src/database/background-migrations/background-migration';
import { BackgroundMigrations } from '../src/database/background-migrations/background-migrations.service';
import { DataMigrationRepository } from '../src/database/background-migrations/data-migration.repository';
import { ConnectionMonitor } from '../src/database/connection-monitor';
import { DatabaseService, Db, MIGRATIONS_DIR } from '../src/database/database.service';
import { Migrator } from '../src/database/migrator';
import { MetricsService } from '../src/metrics/metrics.service';
import { createTestDatabase, TestDatabase } from './support/database';
import { waitFor } from './support/service';

const ROWS = 5_000;
const BATCH = 400;

/**
 * A release's change to every row, as a background data migration: a table of the test's own whose new column is
 * filled in batches by the worker's runner, one runner at a time, resumed from its cursor after a stop midway, a
 * failed batch tried again, every row changed exactly once.
 */
describe('background data migrations', () => {
  let db: TestDatabase;
  let pool: Pool;
  const running: Array<{ runner: BackgroundMigrations; database: DatabaseService }> = [];

  beforeEach(async () => {
    db = await createTestDatabase('background_migrations');
    pool = db.pool(2);
    await new Migrator(pool, MIGRATIONS_DIR).migrate();
    await pool.query('CREATE TABLE scratch (id text PRIMARY KEY, v int NOT NULL, doubled int, touched int NOT NULL DEFAULT 0)');
    await pool.query(`INSERT INTO scratch (id, v) SELECT lpad(g::text, 6, '0'), g FROM generate_series(1, ${ROWS}) g`);
    await pool.query('ANALYZE scratch');
  });

  afterEach(async () => {
    for (const { runner, database } of running.splice(0)) {
      await runner.onApplicationShutdown();
      await database.onApplicationShutdown();
    }
    await pool.end();
    await db.drop();
  });

  /** Fills `doubled` in id order; `fail` decides, before a batch, whether it throws (a fault of the test's choosing). */
  function doubling(fail: (cursor: string | null) => boolean = () => false): BackgroundMigration & { batches: number } {
    return {
      name: '99990101000000_scratch_doubled',
      batches: 0,
      async estimateRows(database: Db) {
        const { rows } = await sql<{ n: number }>`SELECT reltuples::bigint AS n FROM pg_class WHERE relname = 'scratch'`.execute(database);
        return Number(rows[0]?.n ?? 0);
      },
      async batch(trx: Db, cursor: string | null, size: number) {
        this.batches += 1;
        if (fail(cursor)) throw new Error('a batch that fails (the test)');
        const { rows } = await sql<{ id: string }>`
          UPDATE scratch SET doubled = v * 2, touched = touched + 1
           WHERE id IN (SELECT id FROM scratch WHERE id > ${cursor ?? ''} ORDER BY id LIMIT ${size})
           RETURNING id`.execute(trx);
        if (rows.length === 0) return null;
        return {
          cursor: rows
            .map((r) => r.id)
            .sort()
            .at(-1)!,
          rows: rows.length,
        };
      },
    };
  }

  function startRunner(migration: BackgroundMigration): BackgroundMigrations {
    const config = AppConfig.fromEnvironment({ DATABASE_URL: db.url, ROLE: 'worker', BACKGROUND_MIGRATION_BATCH_SIZE: String(BATCH) });
    const database = new DatabaseService(config, new ConnectionMonitor());
    const runner = new BackgroundMigrations(config, database, new DataMigrationRepository(database), [migration], new MetricsService());
    running.push({ runner, database });
    runner.onApplicationBootstrap();
    return runner;
  }

  const state = async () =>
    (
      await pool.query<{ changed: number; once: number; left: number }>(
        'SELECT count(*) FILTER (WHERE doubled = v * 2)::int AS changed, count(*) FILTER (WHERE touched = 1)::int AS once, count(*) FILTER (WHERE doubled IS NULL)::int AS left FROM scratch',
      )
    ).rows[0];

  it('changes every row once, in batches, and records its progress', async () => {
    const runner = startRunner(doubling());
    await waitFor('the migration done', async () => ((await runner.done('99990101000000_scratch_doubled')) ? true : undefined), 60_000, 100);

    expect(await state()).toEqual({ changed: ROWS, once: ROWS, left: 0 });
    const [progress] = await runner.progress();
    expect(progress).toMatchObject({
      name: '99990101000000_scratch_doubled',
      state: 'done',
      rowsDone: ROWS,
      rowsTotal: ROWS,
      batches: Math.ceil(ROWS / BATCH),
      cursor: String(ROWS).padStart(6, '0'),
      lastError: null,
    });
    expect(progress.finishedAt).toBeInstanceOf(Date);
  }, 90_000);

  it('resumes from its cursor after a stop midway, and runs on one worker at a time', async () => {
    const first = doubling();
    const stopped = startRunner(first);
    await waitFor(
      'a few batches',
      async () => ((await pool.query<{ b: number }>('SELECT batches AS b FROM data_migration')).rows[0]?.b >= 3 ? true : undefined),
      60_000,
      20,
    );
    await stopped.onApplicationShutdown();
    const halfway = await state();
    expect(halfway.left).toBeGreaterThan(0);

    // Two workers now: one takes the lock and resumes; neither changes a row twice.
    const [a, b] = [startRunner(doubling()), startRunner(doubling())];
    await waitFor('the migration done', async () => ((await a.done('99990101000000_scratch_doubled')) ? true : undefined), 60_000, 100);

    expect(await state()).toEqual({ changed: ROWS, once: ROWS, left: 0 });
    const [progress] = await b.progress();
    expect(progress).toMatchObject({ state: 'done', rowsDone: ROWS });
  }, 90_000);

  it('tries a failed batch again from the same cursor, saying why meanwhile', async () => {
    let failures = 0;
    const migration = doubling((cursor) => cursor !== null && cursor >= '002000' && failures++ < 1);
    const runner = startRunner(migration);
    await waitFor(
      'the failure recorded',
      async () => {
        const [row] = (await pool.query<{ last_error: string | null }>('SELECT last_error FROM data_migration')).rows;
        return row?.last_error ? row.last_error : undefined;
      },
      60_000,
      20,
    ).then((error) => expect(error).toBe('a batch that fails (the test)'));
    await waitFor('the migration done', async () => ((await runner.done('99990101000000_scratch_doubled')) ? true : undefined), 60_000, 100);

    expect(await state()).toEqual({ changed: ROWS, once: ROWS, left: 0 });
    expect((await runner.progress())[0]).toMatchObject({ rowsDone: ROWS, lastError: null });
  }, 90_000);
});
