import { randomBytes, randomUUID } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { createTestDatabase, TestDatabase } from './support/database';
import { HARNESS_ADMIN_TOKEN, Harness, startHarness } from './support/harness';
import { LogicalServer, startLogicalServer } from './support/logical-postgres';
import { freePort } from './support/ports';
import { ServiceProcess, spawnService } from './support/process';
import { Change, PgOutputDecoder, Row } from './support/pgoutput';
import { RunningService, startService, waitFor } from './support/service';
import { postgresBinDir } from './support/streaming-replica';

/**
 * LOGICAL_PUBLICATION against a PostgreSQL of this test's own, started with wal_level=logical (the machine's server is
 * not, and stays as it is): the publication the service makes at boot, and what a pgoutput slot (what Debezium and
 * Sequin read) receives for a post's insert, update and deletion made through the service.
 */
const BIN = postgresBinDir();
const PUBLICATION = 'pozy_sync';
const SLOT = 'cdc_test';
const ADMIN = { authorization: `Bearer ${HARNESS_ADMIN_TOKEN}` };

async function query<R extends object>(client: Client, text: string, values: unknown[] = []): Promise<R[]> {
  return (await client.query<R>(text, values)).rows;
}

/** The publication's tables, as PostgreSQL lists them, with any row filter. */
async function publishedTables(client: Client, publication = PUBLICATION): Promise<{ table: string; filter: string | null }[]> {
  return query(client, 'SELECT tablename AS table, rowfilter AS filter FROM pg_publication_tables WHERE pubname = $1 ORDER BY tablename', [
    publication,
  ]);
}

/** A log destination that keeps the service's lines (JSON, one a line), for a test that reads them. */
function logLines(): { lines: string[]; destination: { write(line: string): void } } {
  const lines: string[] = [];
  return { lines, destination: { write: (line: string) => void lines.push(line) } };
}

async function readiness(service: RunningService): Promise<Record<string, unknown>> {
  const response = await fetch(`${service.baseUrl}/health/ready`);
  expect(response.status).toBe(200);
  return ((await response.json()) as { details: Record<string, unknown> }).details;
}

describe('logical replication (LOGICAL_PUBLICATION, a server with wal_level=logical)', () => {
  let server: LogicalServer;
  let admin: Client;
  let harness: Harness;
  /** Set once the restart test has closed the harness's service (it starts others on the same database). */
  let harnessServiceClosed = false;
  const decoder = new PgOutputDecoder();
  /** Every row change the slot has handed out so far, in commit order. */
  const received: Change[] = [];

  beforeAll(async () => {
    // Never skipped: without PostgreSQL's server tools there is nothing to show, and the test says what to install.
    if (!BIN) throw new Error('No PostgreSQL server tools (initdb, pg_ctl) under /usr/lib/postgresql or pg_config: apt-get install postgresql');
    server = await startLogicalServer(BIN);
    const setup = new Client({ connectionString: server.url('postgres') });
    await setup.connect();
    await setup.query('CREATE DATABASE pozy');
    await setup.end();
    admin = new Client({ connectionString: server.url('pozy') });
    await admin.connect();
    // Only the admin API's resyncs write the mirror here: every write is one the test asked for.
    harness = await startHarness(server.url('pozy'), { deliver: false, env: { LOGICAL_PUBLICATION: PUBLICATION } });
  }, 120_000);

  afterAll(async () => {
    if (harnessServiceClosed) await harness?.sim.stop();
    else await harness?.close();
    await admin?.query('SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots').catch(() => undefined);
    await admin?.end();
    await server?.stop();
  }, 60_000);

  /** The slot's new messages, decoded (a read consumes them, as a consumer's confirmed position would). */
  async function drain(): Promise<Change[]> {
    const rows = await query<{ data: Buffer }>(
      admin,
      `SELECT data FROM pg_logical_slot_get_binary_changes($1, NULL, NULL, 'proto_version', '1', 'publication_names', $2)`,
      [SLOT, PUBLICATION],
    );
    const changes = decoder.decode(rows.map((row) => row.data));
    received.push(...changes);
    return changes;
  }

  /** Waits for the slot to hand out a change matching `match`, reading it as it fills. */
  async function slotChange(what: string, match: (change: Change) => boolean): Promise<Change> {
    return waitFor(
      what,
      async () => {
        await drain();
        return received.find(match);
      },
      60_000,
      100,
    );
  }

  async function resync(path: string): Promise<void> {
    const response = await fetch(`${harness.service.baseUrl}/admin/resync/${path}`, { method: 'POST', headers: ADMIN });
    expect(response.status).toBe(202);
  }

  async function mirrored(postId: string, until: (row: { sequence: number; deleted_at: Date | null }) => boolean): Promise<void> {
    await waitFor(
      `post ${postId} in the mirror`,
      async () => {
        const [row] = await query<{ sequence: number; deleted_at: Date | null }>(admin, 'SELECT sequence, deleted_at FROM post WHERE id = $1', [
          postId,
        ]);
        return row && until(row) ? true : undefined;
      },
      60_000,
      100,
    );
  }

  const postChange = (kind: Change['kind'], postId: string, sequence: string) => (change: Change) =>
    change.kind === kind && 'row' in change && change.table === 'post' && change.row.id === postId && change.row.sequence === sequence;

  it('makes the publication at boot: post and account, keyed by their primary key (workspace_id, id)', async () => {
    expect(await publishedTables(admin)).toEqual([
      { table: 'account', filter: null },
      { table: 'post', filter: null },
    ]);
    const [publication] = await query<Record<string, boolean>>(
      admin,
      'SELECT puballtables, pubinsert, pubupdate, pubdelete, pubtruncate FROM pg_publication WHERE pubname = $1',
      [PUBLICATION],
    );
    expect(publication).toEqual({ puballtables: false, pubinsert: true, pubupdate: true, pubdelete: true, pubtruncate: true });
    // `d`: the primary key identifies a row in an UPDATE's or DELETE's old tuple; no FULL (a whole old row per write).
    const identities = await query<{ relname: string; relreplident: string }>(
      admin,
      "SELECT relname, relreplident FROM pg_class WHERE relname IN ('post', 'account') AND relkind = 'r' ORDER BY relname",
    );
    expect(identities).toEqual([
      { relname: 'account', relreplident: 'd' },
      { relname: 'post', relreplident: 'd' },
    ]);
    expect((await readiness(harness.service)).logicalPublication).toEqual({
      status: 'up',
      publication: PUBLICATION,
      state: 'ready',
      walLevel: 'logical',
      action: 'created',
      problem: null,
    });
  });

  it("hands a pgoutput slot a post's insert, update and deletion with the columns a consumer needs, and nothing of the other tables", async () => {
    await admin.query(`SELECT pg_create_logical_replication_slot($1, 'pgoutput')`, [SLOT]);
    const world = harness.sim.world;
    const profile = world.createProfile(`Brand ${randomUUID().slice(0, 6)}`);
    const account = world.connectAccount(profile._id, 'instagram', 'brand');
    await resync(`profiles/${profile._id}/accounts`);
    // Mirrored before the post: an account mirrored after it would give the post a profile, and a sequence more.
    const accountInsert = await slotChange('the account insert', (c) => c.kind === 'insert' && c.table === 'account' && c.row.id === account._id);
    expect(accountInsert).toMatchObject({
      row: { workspace_id: 'default', id: account._id, profile_id: profile._id, platform: 'instagram', sequence: '1', removed_at: null },
    });

    // Created: an INSERT of the whole row.
    const post = world.createPost({
      content: 'first words',
      accountIds: [account._id],
      scheduledFor: new Date(Date.now() + 86_400_000).toISOString(),
    });
    await resync(`posts/${post._id}`);
    await mirrored(post._id, (row) => row.sequence === 1);
    const insert = await slotChange('the post insert', postChange('insert', post._id, '1'));
    if (insert.kind !== 'insert') throw new Error('not an insert');
    expect(insert.row).toMatchObject({
      workspace_id: 'default',
      id: post._id,
      status: 'scheduled',
      content: 'first words',
      sequence: '1',
      deleted_at: null,
      account_ids: `{${account._id}}`,
    });
    expect(insert.row.pozy_updated_at).toEqual(expect.any(String));
    // `platforms` and `extra` (everything else Pozy answered) are JSON text: the whole post is in the row.
    expect(JSON.parse(insert.row.platforms as string)).toEqual([expect.objectContaining({ accountId: account._id, platform: 'instagram' })]);
    expect(JSON.parse(insert.row.extra as string)).toEqual(expect.any(Object));

    // Edited: an UPDATE with the whole new row and the next sequence; no old tuple (the key did not change).
    world.editPost(post._id, { content: 'second words' });
    await resync(`posts/${post._id}`);
    await mirrored(post._id, (row) => row.sequence === 2);
    const update = await slotChange('the post update', postChange('update', post._id, '2'));
    if (update.kind !== 'update') throw new Error('not an update');
    expect(update.row).toMatchObject({ workspace_id: 'default', id: post._id, content: 'second words', sequence: '2', deleted_at: null });
    expect(update.old).toBeUndefined();
    expect(Date.parse(update.row.pozy_updated_at as string)).toBeGreaterThan(Date.parse(insert.row.pozy_updated_at as string));

    // Read again with nothing changed: the row's bookkeeping (synced_at, read_id) moves, so an UPDATE comes with the
    // same sequence. A consumer applies a row only when its sequence is higher than the one it holds.
    const before = received.filter(postChange('update', post._id, '2')).length;
    await resync(`posts/${post._id}`);
    const same = await waitFor(
      'the unchanged re-read',
      async () => {
        await drain();
        const updates = received.filter(postChange('update', post._id, '2'));
        return updates.length > before ? updates[updates.length - 1] : undefined;
      },
      60_000,
      100,
    );
    if (same.kind !== 'update') throw new Error('not an update');
    expect(same.row).toMatchObject({ content: 'second words', pozy_updated_at: update.row.pozy_updated_at });
    expect(same.row.read_id).not.toBe(update.row.read_id);

    // Deleted in Pozy: the mirror marks the row (deleted_at, the next sequence) and keeps it: an UPDATE, not a DELETE.
    world.deletePost(post._id);
    await resync(`posts/${post._id}`);
    await mirrored(post._id, (row) => row.deleted_at !== null);
    const deletion = await slotChange('the post deletion', postChange('update', post._id, '3'));
    if (deletion.kind !== 'update') throw new Error('not an update');
    expect(deletion.row).toMatchObject({ workspace_id: 'default', id: post._id, sequence: '3', content: 'second words' });
    expect(deletion.row.deleted_at).toEqual(expect.any(String));
    expect(received.some((c) => c.kind === 'delete')).toBe(false);

    // Rows are deleted only when a workspace is removed (DELETE /admin/workspaces/:id), by this statement's shape: the
    // DELETE carries the old row's key alone (replica identity DEFAULT), the other columns null.
    await admin.query("DELETE FROM post WHERE ctid = ANY (ARRAY(SELECT ctid FROM post WHERE workspace_id = 'default' AND id = $1))", [post._id]);
    const removal = await slotChange('the row deletion', (c) => c.kind === 'delete' && c.table === 'post' && c.old.id === post._id);
    expect(removal).toMatchObject({ oldKind: 'key', old: { workspace_id: 'default', id: post._id, sequence: null, deleted_at: null } });

    // The feed's own table was written meanwhile (three post entries, one account entry), and never reached the slot.
    const [{ entries }] = await query<{ entries: number }>(admin, 'SELECT count(*)::int AS entries FROM change');
    expect(entries).toBeGreaterThanOrEqual(4);
    const tables = new Set(received.flatMap((c) => (c.kind === 'truncate' ? c.tables : [c.table])));
    expect([...tables].sort()).toEqual(['account', 'post']);
    expect([...decoder.relations.values()].map((r) => r.table).sort()).toEqual(['account', 'post']);
    const postRelation = [...decoder.relations.values()].find((r) => r.table === 'post')!;
    expect(postRelation.replicaIdentity).toBe('d');
    expect(
      postRelation.columns
        .filter((c) => c.key)
        .map((c) => c.name)
        .sort(),
    ).toEqual(['id', 'workspace_id']);
  }, 300_000);

  it("leaves a large column the deletion did not rewrite out of the UPDATE (unchanged TOAST), as PostgreSQL's default identity does", async () => {
    const world = harness.sim.world;
    const profile = world.createProfile(`Long ${randomUUID().slice(0, 6)}`);
    const account = world.connectAccount(profile._id, 'facebook', 'long');
    await resync(`profiles/${profile._id}/accounts`);
    // Mirrored before the post: an account mirrored after it would give the post a profile, and a sequence more.
    await slotChange('the account insert', (c) => c.kind === 'insert' && c.table === 'account' && c.row.id === account._id);
    // Random text does not compress: stored out of line (TOAST), as a long post's content or media list would be.
    const content = randomBytes(12_000).toString('base64');
    const post = world.createPost({ content, accountIds: [account._id], scheduledFor: new Date(Date.now() + 86_400_000).toISOString() });
    await resync(`posts/${post._id}`);
    await mirrored(post._id, (row) => row.sequence === 1);
    const insert = await slotChange('the long post insert', postChange('insert', post._id, '1'));
    expect((insert as { row: Row }).row.content).toBe(content);
    // A re-read sets every column from Pozy's answer: the UPDATE carries the long content, though it is unchanged.
    await resync(`posts/${post._id}`);
    const reread = await slotChange('the long post re-read', postChange('update', post._id, '1'));
    expect((reread as { row: Row }).row.content).toBe(content);
    world.deletePost(post._id);
    await resync(`posts/${post._id}`);
    await mirrored(post._id, (row) => row.deleted_at !== null);
    const deletion = await slotChange('the long post deletion', postChange('update', post._id, '2'));
    // The consumer keeps the value it has: Debezium sends its placeholder (unavailable.value.placeholder) here.
    expect((deletion as { row: Row }).row).toMatchObject({ id: post._id, sequence: '2', content: { unchanged: true } });
  }, 300_000);

  it('restarts as a no-op with the publication in place, and puts back its table list when it was changed', async () => {
    const before = await query<{ oid: number }>(admin, 'SELECT oid::int FROM pg_publication WHERE pubname = $1', [PUBLICATION]);
    await harness.service.close();
    harnessServiceClosed = true;
    const again = await startService(server.url('pozy'), { LOGICAL_PUBLICATION: PUBLICATION });
    try {
      expect((await readiness(again)).logicalPublication).toMatchObject({ state: 'ready', action: 'unchanged' });
      expect(await query(admin, 'SELECT oid::int FROM pg_publication WHERE pubname = $1', [PUBLICATION])).toEqual(before);
    } finally {
      await again.close();
    }

    // Someone added the feed's table, narrowed post to one workspace and dropped deletes: the next boot sets it back.
    await admin.query(`ALTER PUBLICATION ${PUBLICATION} SET TABLE post WHERE (workspace_id = 'default'), account, change`);
    await admin.query(`ALTER PUBLICATION ${PUBLICATION} SET (publish = 'insert, update')`);
    const repaired = await startService(server.url('pozy'), { LOGICAL_PUBLICATION: PUBLICATION });
    try {
      expect((await readiness(repaired)).logicalPublication).toMatchObject({ state: 'ready', action: 'altered' });
      expect(await publishedTables(admin)).toEqual([
        { table: 'account', filter: null },
        { table: 'post', filter: null },
      ]);
      expect(await query(admin, 'SELECT pubdelete, pubtruncate FROM pg_publication WHERE pubname = $1', [PUBLICATION])).toEqual([
        { pubdelete: true, pubtruncate: true },
      ]);
      expect(await query(admin, 'SELECT oid::int FROM pg_publication WHERE pubname = $1', [PUBLICATION])).toEqual(before);
    } finally {
      await repaired.close();
    }
  }, 120_000);

  it('creates nothing when LOGICAL_PUBLICATION is unset', async () => {
    await admin.query('CREATE DATABASE pozy_unset');
    const service = await startService(server.url('pozy_unset'));
    const client = new Client({ connectionString: server.url('pozy_unset') });
    await client.connect();
    try {
      expect(await query(client, 'SELECT pubname FROM pg_publication')).toEqual([]);
      expect((await readiness(service)).logicalPublication).toBeUndefined();
    } finally {
      await client.end();
      await service.close();
    }
  }, 120_000);

  it('makes the publication, and says so, when two replicas boot at once', async () => {
    await admin.query('CREATE DATABASE pozy_pair');
    const env = { LOGICAL_PUBLICATION: 'pozy_pair' };
    const [first, second] = await Promise.all([startService(server.url('pozy_pair'), env), startService(server.url('pozy_pair'), env)]);
    const client = new Client({ connectionString: server.url('pozy_pair') });
    await client.connect();
    try {
      const actions = [(await readiness(first)).logicalPublication, (await readiness(second)).logicalPublication].map(
        (state) => (state as { action: string }).action,
      );
      expect(actions.sort()).toEqual(['created', 'unchanged']);
      expect(await publishedTables(client, 'pozy_pair')).toEqual([
        { table: 'account', filter: null },
        { table: 'post', filter: null },
      ]);
    } finally {
      await client.end();
      await Promise.all([first.close(), second.close()]);
    }
  }, 120_000);

  it('says what is missing, and keeps the mirror running, when the database user may not make the publication', async () => {
    // A user with every right the mirror needs on pozy_pair (made and migrated above by the tables' owner), but who
    // owns none of its tables: CREATE PUBLICATION ... FOR TABLE needs their ownership.
    await admin.query('CREATE ROLE mirror_user LOGIN');
    const owner = new Client({ connectionString: server.url('pozy_pair') });
    await owner.connect();
    try {
      for (const grant of [
        'GRANT CREATE ON DATABASE pozy_pair TO mirror_user',
        'GRANT ALL ON SCHEMA public, graphile_worker TO mirror_user',
        'GRANT ALL ON ALL TABLES IN SCHEMA public, graphile_worker TO mirror_user',
        'GRANT ALL ON ALL SEQUENCES IN SCHEMA public, graphile_worker TO mirror_user',
        'GRANT ALL ON ALL FUNCTIONS IN SCHEMA graphile_worker TO mirror_user',
      ])
        await owner.query(grant);
    } finally {
      await owner.end();
    }
    // ROLE=api: graphile-worker's own tables are its owner's (row-level security), which is none of this test's business.
    const log = logLines();
    const service = await startService(
      server.url('pozy_pair', 'mirror_user'),
      { LOGICAL_PUBLICATION: 'pozy_rights', ROLE: 'api' },
      0,
      log.destination,
    );
    try {
      const state = (await readiness(service)).logicalPublication as Record<string, unknown>;
      expect(state).toMatchObject({ status: 'up', publication: 'pozy_rights', state: 'failed', walLevel: 'logical', action: null });
      expect(state.problem).toMatch(/may not create or change the publication pozy_rights \(must be owner of table (post|account)\)/);
      expect(state.problem).toMatch(/ownership of the tables post, account/);
      // Logged as an error, in the same words.
      expect(log.lines.map((line) => JSON.parse(line) as { level: number; msg: string })).toContainEqual(
        expect.objectContaining({ level: 50, msg: state.problem }),
      );
      expect(await query(admin, "SELECT pubname FROM pg_publication WHERE pubname = 'pozy_rights'")).toEqual([]);
      // The mirror itself serves.
      expect((await fetch(`${service.baseUrl}/posts`)).status).toBe(200);
    } finally {
      await service.close();
    }
  }, 120_000);
});

describe('LOGICAL_PUBLICATION on a server without logical WAL (the machine’s, wal_level=replica)', () => {
  let database: TestDatabase;
  let service: RunningService;
  const log = logLines();

  beforeAll(async () => {
    database = await createTestDatabase('logical_off');
    service = await startService(database.url, { LOGICAL_PUBLICATION: PUBLICATION, LOG_LEVEL: 'warn' }, 0, log.destination);
  }, 120_000);

  afterAll(async () => {
    await service?.close();
    await database?.drop();
  });

  it('keeps running, makes the publication, and names wal_level in the readiness answer', async () => {
    const client = new Client({ connectionString: database.url });
    await client.connect();
    try {
      const [{ level }] = await query<{ level: string }>(client, "SELECT current_setting('wal_level') AS level");
      // The machine's server must not be logical for this to mean anything; CI's Debian server is `replica`.
      expect(level).not.toBe('logical');
      expect(await query(client, 'SELECT pubname FROM pg_publication')).toEqual([{ pubname: PUBLICATION }]);
    } finally {
      await client.end();
    }
    const state = (await readiness(service)).logicalPublication as Record<string, unknown>;
    expect(state).toMatchObject({ status: 'up', state: 'wal_level', action: 'created' });
    expect(state.problem).toMatch(/wal_level is "(replica|minimal)", not "logical".*wal_level=logical/);
    // A warning in the log, naming the setting.
    expect(log.lines.map((line) => JSON.parse(line) as { level: number; msg: string })).toContainEqual(
      expect.objectContaining({ level: 40, msg: state.problem }),
    );
    expect((await fetch(`${service.baseUrl}/posts`)).status).toBe(200);
  });
});

describe('LOGICAL_PUBLICATION with the embedded PostgreSQL (no DATABASE_URL)', () => {
  // The built service (`node dist/main.js`, as a user runs it): main.ts starts the embedded server with
  // wal_level=logical when the variable is set, so a local Debezium or Sequin can read it.
  const cwd = mkdtempSync(join(tmpdir(), 'pozy-embedded-logical-'));
  let service: ServiceProcess | undefined;

  afterAll(async () => {
    // SIGTERM: the service closes, then stops its PostgreSQL.
    if (service && service.child.exitCode === null && service.child.signalCode === null) {
      service.child.kill('SIGTERM');
      await service.exited;
    }
    rmSync(cwd, { recursive: true, force: true });
  }, 60_000);

  it('runs it with wal_level=logical, and the publication is ready', async () => {
    // PostgreSQL runs as `postgres` when the test runs as root: it must traverse the directory.
    chmodSync(cwd, 0o755);
    const port = await freePort();
    service = spawnService(
      {
        HOST: '127.0.0.1',
        PORT: String(port),
        EMBEDDED_DATABASE_PORT: String(await freePort()),
        LOGICAL_PUBLICATION: PUBLICATION,
        // Nothing answers there: the service never reaches a real Pozy.
        POZY_API_URL: `http://127.0.0.1:${await freePort()}`,
        BACKFILL_CRON: 'off',
        INITIAL_IMPORT: 'off',
        SHUTDOWN_DRAIN_MS: '0',
      },
      cwd,
    );
    const running = service;
    const details = await waitFor(
      'the service to become ready',
      async () => {
        const response = await fetch(`http://127.0.0.1:${port}/health/ready`).catch(() => undefined);
        return response?.status === 200 ? ((await response.json()) as { details: Record<string, unknown> }).details : undefined;
      },
      90_000,
      200,
    ).catch((error: Error) => {
      throw new Error(`${error.message}:\n${running.output()}`);
    });
    expect(details.logicalPublication).toMatchObject({ state: 'ready', walLevel: 'logical', action: 'created' });
  }, 120_000);
});
