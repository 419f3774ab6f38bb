import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Pool } from 'pg';
import { Migrator, readMigrations } from '../src/database/migrator';
import { getJson } from './support/http';
import { createTestDatabase, TestDatabase } from './support/database';
import { deliver, postEvent } from './support/pozy-events';
import { RunningService, startService } from './support/service';

const MIGRATIONS_DIR = join(__dirname, '..', 'prisma', 'migrations');
/** The migration that gave every per-workspace table its workspace. */
const WORKSPACE_MIGRATION = '20261203100000_workspace_keys';

const POST_IDS = Array.from({ length: 30 }, (_, i) => `66aa01f3c2b1e4d5f6a7${String(i).padStart(4, '0')}`);
const ACCOUNT_ID = 'acc_upgrade_1';
const STORED_EVENT = postEvent(POST_IDS[0]);

/**
 * What a single-workspace deployment held before workspaces existed, written with the schema of the migrations before
 * WORKSPACE_MIGRATION: mirrored posts and an account, events and a pending read, feed entries, a finished import.
 */
async function fillOldSchema(pool: Pool): Promise<void> {
  await pool.query(
    `INSERT INTO account (id, profile_id, platform, username, display_name, is_active, needs_reconnection, synced_at, read_started_at, read_id, sequence)
     VALUES ($1, 'prof_1', 'linkedin', 'acme', 'Acme', true, false, now(), now(), gen_random_uuid(), 1)`,
    [ACCOUNT_ID],
  );
  await pool.query(
    `INSERT INTO post (id, status, content, platforms, account_ids, platform_names, pozy_created_at, pozy_updated_at,
                       synced_at, read_started_at, read_id, sequence)
     SELECT id, 'scheduled', 'post ' || id, jsonb_build_array(jsonb_build_object('platform', 'linkedin', 'accountId', $2::text)),
            ARRAY[$2::text], ARRAY['linkedin'], now() - interval '1 day', now() - interval '1 hour', now(), now(), gen_random_uuid(), 1
       FROM unnest($1::text[]) id`,
    [POST_IDS, ACCOUNT_ID],
  );
  await pool.query(
    `INSERT INTO pozy_event (id, type, payload, "timestamp", resource_type, resource_id)
     VALUES ($1, $2, $3, $4, 'post', $5)`,
    [STORED_EVENT.id, STORED_EVENT.event, JSON.stringify(STORED_EVENT), STORED_EVENT.timestamp, POST_IDS[0]],
  );
  await pool.query(
    `INSERT INTO reconcile_request (key, resource_type, resource_id, due_at, requested_at, last_read_at)
     VALUES ($1, 'post', $2, now() + interval '1 day', now(), now() - interval '1 minute')`,
    [`post:${POST_IDS[1]}`, POST_IDS[1]],
  );
  await pool.query(
    `INSERT INTO change (position, type, resource_id, sequence, profile_ids, platforms, data)
     SELECT row_number() OVER (ORDER BY id), 'post.changed', id, 1, ARRAY['prof_1'], ARRAY['linkedin'], jsonb_build_object('id', id)
       FROM unnest($1::text[]) id`,
    [POST_IDS.slice(0, 5)],
  );
  await pool.query(
    `INSERT INTO sweep_run (id, kind, trigger, status, phase, finished_at)
     VALUES (gen_random_uuid(), 'import', 'auto', 'succeeded', 'done', now() - interval '1 day')`,
  );
}

describe('a single-workspace database from before workspaces, upgraded in place', () => {
  let db: TestDatabase;
  let pool: Pool;
  let before: string;
  let service: RunningService;

  beforeAll(async () => {
    db = await createTestDatabase('workspace_upgrade');
    pool = db.pool(2);
    // The migrations as they were before workspaces, applied and filled as that version would have.
    before = mkdtempSync(join(tmpdir(), 'pozy-migrations-'));
    for (const { name } of readMigrations(MIGRATIONS_DIR)) {
      if (name >= WORKSPACE_MIGRATION) continue;
      cpSync(join(MIGRATIONS_DIR, name), join(before, name), { recursive: true });
    }
    await new Migrator(pool, before).migrate();
    await fillOldSchema(pool);
    // This version's start applies the rest.
    service = await startService(db.url, { ROLE: 'api', INITIAL_IMPORT: 'auto' });
  }, 120_000);

  afterAll(async () => {
    await service?.close();
    await pool?.end();
    await db?.drop();
    if (before) rmSync(before, { recursive: true, force: true });
  });

  it('makes every row the default workspace’s, in every per-workspace table', async () => {
    const counts = await pool.query<{ table: string; rows: number; others: number }>(
      `SELECT t AS table, (xpath('/row/n/text()', query_to_xml(format('SELECT count(*) AS n FROM %I', t), false, true, '')))[1]::text::int AS rows,
              (xpath('/row/n/text()', query_to_xml(format('SELECT count(*) AS n FROM %I WHERE workspace_id <> ''default''', t), false, true, '')))[1]::text::int AS others
         FROM unnest(ARRAY['post', 'account', 'pozy_event', 'reconcile_request', 'change', 'sweep_run']) t ORDER BY t`,
    );
    expect(counts.rows).toEqual([
      { table: 'account', rows: 1, others: 0 },
      { table: 'change', rows: 5, others: 0 },
      { table: 'post', rows: POST_IDS.length, others: 0 },
      { table: 'pozy_event', rows: 1, others: 0 },
      { table: 'reconcile_request', rows: 1, others: 0 },
      { table: 'sweep_run', rows: 1, others: 0 },
    ]);
  });

  it('answers the same posts, accounts and feed, each carrying workspaceId "default"', async () => {
    const one = await getJson(service, `/posts/${POST_IDS[3]}`);
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ id: POST_IDS[3], workspaceId: 'default', content: `post ${POST_IDS[3]}`, profileIds: ['prof_1'], sequence: 1 });

    const list = await getJson(service, '/posts?limit=100');
    expect((list.body.data as Array<{ id: string; workspaceId: string }>).map((p) => [p.id, p.workspaceId])).toEqual(
      POST_IDS.map((id) => [id, 'default']),
    );
    const accounts = await getJson(service, '/accounts');
    expect(accounts.body.data).toEqual([expect.objectContaining({ id: ACCOUNT_ID, workspaceId: 'default', profileId: 'prof_1' })]);

    const feed = await getJson(service, '/changes?after=0');
    expect((feed.body.data as Array<{ cursor: string; id: string; workspaceId: string }>).map((c) => [c.cursor, c.id, c.workspaceId])).toEqual(
      POST_IDS.slice(0, 5).map((id, i) => [String(i + 1), id, 'default']),
    );
  });

  it('knows the events it stored before: a redelivery is a duplicate, and a new event joins the read already pending', async () => {
    const again = await deliver(service.baseUrl, STORED_EVENT);
    expect(again).toMatchObject({ status: 200, body: { workspaceId: 'default', duplicate: true, reconcile: null } });

    const joining = await deliver(service.baseUrl, postEvent(POST_IDS[1]));
    expect(joining).toMatchObject({ status: 200, body: { duplicate: false, reconcile: `post:${POST_IDS[1]}` } });
    const requests = await pool.query('SELECT workspace_id, key FROM reconcile_request ORDER BY key');
    expect(requests.rows).toEqual([{ workspace_id: 'default', key: `post:${POST_IDS[1]}` }]);
  });

  it('does not import again: the import that finished before the upgrade counts', async () => {
    const runs = await pool.query<{ kind: string; status: string }>('SELECT kind, status FROM sweep_run');
    expect(runs.rows).toEqual([{ kind: 'import', status: 'succeeded' }]);
    const status = await getJson(service, '/sync/status');
    expect(status.body).toMatchObject({ import: { status: 'succeeded' } });
  });

  it('leaves no default behind: an insert that names no workspace is refused', async () => {
    await expect(
      pool.query(`INSERT INTO pozy_event (id, type, payload, "timestamp") VALUES ('evt_nameless', 'post.published', '{}', now())`),
    ).rejects.toThrow(/workspace_id/);
  });
});
