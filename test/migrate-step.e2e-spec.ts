import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MIGRATIONS_DIR } from '../src/database/database.service';
import { readMigrations } from '../src/database/migrator';
import { createTestDatabase, TestDatabase } from './support/database';
import { freePort } from './support/ports';
import { BUILT_MIGRATE, ServiceProcess, spawnService } from './support/process';
import { waitFor } from './support/service';

/**
 * Migrations as a step of their own, as a fleet runs them: replicas with MIGRATE_ON_START=false start on an empty
 * database, wait (alive, not ready, naming the migration they wait for) and serve nothing else; `npm run migrate`
 * (the built `dist/migrate.js`) applies everything and exits 0; the replicas then start on their own.
 */
describe('migrations as their own step (npm run migrate, MIGRATE_ON_START=false)', () => {
  let db: TestDatabase;
  let spoolDir: string;
  const running: ServiceProcess[] = [];

  beforeAll(async () => {
    db = await createTestDatabase('migrate_step');
    spoolDir = mkdtempSync(join(tmpdir(), 'pozy-migrate-step-'));
  });

  afterAll(async () => {
    for (const child of running) {
      if (child.child.exitCode === null) child.child.kill('SIGTERM');
      await child.exited;
    }
    rmSync(spoolDir, { recursive: true, force: true });
    await db.drop();
  });

  /** Runs the built migrate command to its end. */
  async function migrate(env: Record<string, string>, args: string[] = []): Promise<{ code: number | null; output: string }> {
    const run = spawnService({ LOG_FORMAT: 'pretty', ...env }, tmpdir(), BUILT_MIGRATE, args);
    const code = await run.exited;
    return { code, output: run.output() };
  }

  const get = async (url: string) => {
    const response = await fetch(url, { signal: AbortSignal.timeout(5_000) });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };

  it('waits, not ready and saying for what, until the migrate step has run; then starts', async () => {
    const shipped = readMigrations(MIGRATIONS_DIR).map((m) => m.name);
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const replica = spawnService(
      {
        PORT: String(port),
        HOST: '127.0.0.1',
        DATABASE_URL: db.url,
        MIGRATE_ON_START: 'false',
        SPOOL_DIR: spoolDir,
        INITIAL_IMPORT: 'off',
        BACKFILL_CRON: 'off',
        LOG_LEVEL: 'warn',
      },
      tmpdir(),
    );
    running.push(replica);
    const alive = () => {
      if (replica.child.exitCode !== null) throw new Error(`the replica exited (${replica.child.exitCode}):\n${replica.output()}`);
    };

    const waiting = await waitFor(
      'the replica to answer while it waits',
      async () => {
        alive();
        return get(`${base}/health/ready`).catch(() => undefined);
      },
      60_000,
      100,
    );
    expect(waiting.status).toBe(503);
    expect(waiting.body).toMatchObject({
      error: 'not_ready',
      details: { migrations: { status: 'down', reason: 'schema_behind', waitingFor: shipped[0], pending: shipped } },
    });
    expect(String(waiting.body.message)).toContain(`waiting for ${shipped[0]}`);
    expect((await get(`${base}/health/live`)).status).toBe(200);
    // Nothing else runs on a schema older than the release: every other path is not ready either.
    expect(await get(`${base}/sync/status`)).toMatchObject({ status: 503, body: { error: 'not_ready' } });
    const pool = db.pool(1);
    const { rows } = await pool.query<{ t: string | null }>("SELECT to_regclass('public.pozy_event')::text AS t");
    await pool.end();
    expect(rows[0].t).toBeNull();

    // --status reports and changes nothing: exit 3 while something is pending.
    const status = await migrate({ DATABASE_URL: db.url }, ['--status']);
    expect(status).toMatchObject({ code: 3 });
    expect(status.output).toContain(`${shipped.length} migration(s) pending`);

    const applied = await migrate({ DATABASE_URL: db.url });
    expect(applied.code).toBe(0);
    expect(applied.output).toContain(`Applied ${shipped.length} migration(s)`);
    expect((await migrate({ DATABASE_URL: db.url }, ['--status'])).code).toBe(0);

    // The replica sees it and starts on its own.
    await waitFor(
      'the replica ready once migrated',
      async () => {
        alive();
        return (await get(`${base}/health/ready`).catch(() => undefined))?.status === 200 ? true : undefined;
      },
      60_000,
      100,
    );
    expect((await get(`${base}/health/ready`)).body).toMatchObject({ details: { migrations: { status: 'up' } } });
  }, 180_000);

  it('says what is missing instead of migrating the wrong database', async () => {
    const noUrl = await migrate({});
    expect(noUrl.code).toBe(1);
    expect(noUrl.output).toContain('DATABASE_URL is not set');

    const port = await freePort();
    const replica = spawnService({ PORT: String(port), HOST: '127.0.0.1', MIGRATE_ON_START: 'false', SPOOL_DIR: spoolDir }, tmpdir());
    running.push(replica);
    expect(await replica.exited).toBe(1);
    expect(replica.output()).toContain('MIGRATE_ON_START=false needs DATABASE_URL');
  }, 60_000);
});
