import { partitionOf } from '../src/changes/partition';
import { request } from './support/http';
import { metricTotal, parseMetrics } from './support/metrics';
import { RunningService, waitFor } from './support/service';
import { StatementCounter } from './support/statement-counter';
import { Received, TestSubscriber } from './support/subscriber';
import { ServiceSpec, startSpec } from './support/spec';

/**
 * Named consumers of the change feed (POST /admin/consumers, GET /changes?consumer=, POST /changes/commit), on a real
 * PostgreSQL over real HTTP. The feed's entries are inserted as the mirror's writes insert them (placed by the
 * service's own sequencer), so the test knows every resource's sequence.
 */

const ADMIN_TOKEN = 'consumers-admin-token';
const ADMIN = { authorization: `Bearer ${ADMIN_TOKEN}` };
const JSON_HEADERS = { ...ADMIN, 'content-type': 'application/json' };
const ENCRYPTION_KEY = `k1:${Buffer.alloc(32, 7).toString('base64')}`;
const DAY_S = 86_400;

interface Item {
  cursor: string;
  workspaceId: string;
  type: string;
  id: string;
  sequence: number;
}

/** A parsed JSON answer: the test reads into it freely, and compares what it reads. */
type Json = ReturnType<typeof JSON.parse>;

interface Answer {
  status: number;
  body: Json;
}

describe('named consumers with partitions (real PostgreSQL, real HTTP)', () => {
  let spec: ServiceSpec;
  let service: RunningService;
  let ops: TestSubscriber;
  /** Every resource's last sequence written, by `type:id`. */
  const sequences = new Map<string, number>();

  const call = (method: string, path: string, body?: unknown, headers: Record<string, string> = JSON_HEADERS): Promise<Answer> =>
    request<Json>(service, path, { method, headers, body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body) });

  const head = async () => (await call('GET', '/changes/head')).body.cursor as string;
  const count = async (sql: string, params: unknown[] = []) => (await service.pool.query<{ n: number }>(sql, params)).rows[0].n;

  /** Appends changes of these resources (the next sequence of each), as a mirror write does, and waits until all are placed. */
  async function write(resources: string[], workspace = 'default', ageSeconds = 0): Promise<void> {
    const rows = resources.map((key) => {
      const sequence = (sequences.get(key) ?? 0) + 1;
      sequences.set(key, sequence);
      const [kind, id] = key.split(':');
      return { type: kind === 'post' ? 'post.changed' : 'account.changed', id, sequence };
    });
    await service.pool.query(
      `INSERT INTO change (workspace_id, type, resource_id, sequence, profile_ids, platforms, data, changed_at)
       SELECT $1, r.type, r.id, r.sequence, '{prof}', '{instagram}', jsonb_build_object('id', r.id, 'sequence', r.sequence),
              now() - $3 * interval '1 second'
         FROM jsonb_to_recordset($2::jsonb) AS r(type text, id text, sequence int)`,
      [workspace, JSON.stringify(rows), ageSeconds],
    );
    await waitFor(
      'the writes placed',
      async () => ((await count('SELECT count(*)::int AS n FROM change WHERE position IS NULL')) === 0 ? true : undefined),
      60_000,
    );
  }

  const metrics = async () => parseMetrics(await (await fetch(`${service.baseUrl}/metrics`)).text());

  beforeAll(async () => {
    spec = await startSpec('consumers', {
      env: {
        ADMIN_TOKEN,
        CHANGE_RETENTION_DAYS: '1',
        CONSUMER_MAX_LAG_DAYS: '3',
        RETENTION_CRON: 'off',
        SECRETS_ENCRYPTION_KEY: ENCRYPTION_KEY,
        NOTIFY_RETRY_BASE_MS: '50',
        NOTIFY_RETRY_MAX_MS: '200',
      },
    });
    service = spec.service;
    ops = await TestSubscriber.start('/ops');
    expect((await call('POST', '/admin/subscriptions', { url: ops.url, eventTypes: ['ops.consumer.expired'] })).status).toBe(201);
    // Something before any consumer: a consumer starts at the head, after it.
    await write(['post:before-1', 'post:before-2']);
  }, 120_000);

  afterAll(async () => {
    await ops?.close();
    await spec?.close();
  });

  it('makes a consumer at the head of the feed, with no commit yet, and refuses the same name twice', async () => {
    const at = await head();
    const created = await call('POST', '/admin/consumers', { name: 'replay', types: ['post.changed', 'post.deleted'] });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      name: 'replay',
      types: ['post.changed', 'post.deleted'],
      workspaces: '*',
      profileIds: null,
      platforms: null,
      partitions: 1,
      status: 'active',
      head: at,
      lag: { entries: 0, seconds: 0 },
      positions: [{ partition: 0, cursor: at, lag: { entries: 0, seconds: 0 }, committedAt: null, lastReadAt: null, status: 'active' }],
    });
    const again = await call('POST', '/admin/consumers', { name: 'replay', partitions: 2 });
    expect(again.status).toBe(409);
    expect(again.body.error).toBe('consumer_exists');
    expect((await call('GET', '/admin/consumers/replay')).body.partitions).toBe(1);
  });

  it('answers a read not committed again, and goes on after a commit; the same commit twice is one', async () => {
    await write(['post:r1', 'account:r2', 'post:r3']);
    const first = await call('GET', '/changes?consumer=replay');
    expect(first.status).toBe(200);
    expect(first.body.consumer).toBe('replay');
    expect(first.body.partition).toBe(0);
    // Its own filter: accounts are not its type.
    expect((first.body.data as Item[]).map((item) => item.id)).toEqual(['r1', 'r3']);
    const again = await call('GET', '/changes?consumer=replay');
    expect(again.body).toEqual(first.body);

    const committed = await call('POST', '/changes/commit', { consumer: 'replay', cursor: first.body.nextCursor });
    expect(committed.status).toBe(200);
    expect(committed.body).toMatchObject({
      consumer: 'replay',
      partition: 0,
      cursor: first.body.nextCursor,
      status: 'active',
      lag: { entries: 0, seconds: 0 },
    });
    expect(committed.body.committedAt).toEqual(expect.any(String));
    const same = await call('POST', '/changes/commit', { consumer: 'replay', partition: 0, cursor: first.body.nextCursor });
    expect(same.status).toBe(200);
    expect(same.body.committedAt).toBe(committed.body.committedAt);
    expect((await call('GET', '/changes?consumer=replay')).body.data).toEqual([]);

    // The read was recorded (at most once a second: a later one may not move it).
    const shown = (await call('GET', '/admin/consumers/replay')).body;
    expect(shown.positions[0].lastReadAt).toEqual(expect.any(String));
    expect(shown.positions[0].committedAt).toBe(committed.body.committedAt);
  });

  it('records reads cheaply: a burst of reads writes last_read_at about once a second, not once a read', async () => {
    const writes = new StatementCounter(/update "consumer_partition" set "last_read_at"/i);
    try {
      writes.start();
      const started = performance.now();
      for (let i = 0; i < 50; i += 1) expect((await call('GET', '/changes?consumer=replay&limit=1')).status).toBe(200);
      const seconds = (performance.now() - started) / 1000;
      // At most one a second on this replica (and the statement itself skips a row written within the second).
      expect(writes.total()).toBeLessThanOrEqual(Math.ceil(seconds) + 1);
      // A read over a second after the last one recorded is recorded: the count above counts what it should.
      const before = writes.total();
      const burstEnded = performance.now();
      await waitFor('a second past the burst', async () => (performance.now() - burstEnded > 1_100 ? true : undefined), 5_000);
      expect((await call('GET', '/changes?consumer=replay&limit=1')).status).toBe(200);
      await waitFor('the read recorded', async () => (writes.total() === before + 1 ? true : undefined));
    } finally {
      writes.stop();
    }
  });

  it('long-polls a consumer like any read: the answer comes when a matching change does', async () => {
    // Whether the write comes before the poll waits or while it does, the poll answers it (and never empty, within 20 s).
    const polled = call('GET', '/changes?consumer=replay&wait=20');
    await write(['post:waited']);
    const answer = await polled;
    expect(answer.status).toBe(200);
    expect((answer.body.data as Item[]).map((item) => item.id)).toEqual(['waited']);
    expect((await call('POST', '/changes/commit', { consumer: 'replay', cursor: answer.body.nextCursor })).status).toBe(200);
  });

  it('shows the lag in entries and age, in /admin/consumers and /metrics, and none once caught up', async () => {
    const created = await call('POST', '/admin/consumers', { name: 'laggard' });
    expect(created.status).toBe(201);
    // Ten changes made five minutes ago (their changed_at), not yet read by the laggard.
    await write(
      Array.from({ length: 10 }, (_, i) => `post:lag-${i}`),
      'default',
      300,
    );
    const shown = (await call('GET', '/admin/consumers/laggard')).body;
    expect(shown.lag.entries).toBe(10);
    expect(shown.positions[0].lag.entries).toBe(10);
    expect(shown.lag.seconds).toBeGreaterThanOrEqual(300);
    expect(shown.lag.seconds).toBeLessThan(300 + 120);
    const m = await metrics();
    expect(m.get('pozy_sync_consumer_lag_entries{consumer="laggard"}')).toBe(10);
    expect(m.get('pozy_sync_consumer_lag_seconds{consumer="laggard"}')).toBeGreaterThanOrEqual(300);
    expect(m.get('pozy_sync_consumers{status="active"}')).toBe(2);
    expect(m.get('pozy_sync_consumers{status="expired"}')).toBe(0);
    // The replay consumer (its type, committed through its last read) lags by what it has not read: the same ten.
    expect((await call('GET', '/admin/consumers/replay')).body.lag.entries).toBe(10);

    // Caught up: read to the end and commit.
    let cursor = '';
    for (;;) {
      const page = await call('GET', '/changes?consumer=laggard&limit=4');
      expect(page.status).toBe(200);
      if (page.body.nextCursor === cursor) break;
      cursor = page.body.nextCursor as string;
      expect((await call('POST', '/changes/commit', { consumer: 'laggard', cursor })).status).toBe(200);
    }
    expect(cursor).toBe(await head());
    expect((await call('GET', '/admin/consumers/laggard')).body.lag).toEqual({ entries: 0, seconds: 0 });
    const after = await metrics();
    expect(after.get('pozy_sync_consumer_lag_entries{consumer="laggard"}')).toBe(0);
    expect(after.get('pozy_sync_consumer_lag_seconds{consumer="laggard"}')).toBe(0);
    // The list pages by name, with the same figures.
    const page1 = await call('GET', '/admin/consumers?limit=1');
    expect(page1.status).toBe(200);
    expect((page1.body.data as { name: string }[]).map((c) => c.name)).toEqual(['laggard']);
    const page2 = await call('GET', `/admin/consumers?limit=1&cursor=${page1.body.nextCursor as string}`);
    expect((page2.body.data as { name: string }[]).map((c) => c.name)).toEqual(['replay']);
    expect(page2.body.nextCursor).toBeNull();
    expect((page2.body.data as { lag: { entries: number } }[])[0].lag.entries).toBe(10);
  });

  it('three workers on three partitions, one stopped mid-way and restarted, see every change in per-resource order', async () => {
    expect((await call('POST', '/admin/consumers', { name: 'workers', partitions: 3 })).status).toBe(201);
    const resources = [...Array.from({ length: 40 }, (_, i) => `post:w-${i}`), ...Array.from({ length: 20 }, (_, i) => `account:w-${i}`)];
    const from = BigInt(await head());

    /** What each partition's workers were handed, in order, per run (a restart is a new run). */
    const seen: { partition: number; run: number; item: Item }[] = [];
    let writing = true;
    const stopAfter = 30;

    /** A worker: reads its partition, applies (records) the entries, commits; `crashAfter` items in, it stops before committing. */
    async function worker(partition: number, run: number, crashAfter?: number): Promise<void> {
      let handled = 0;
      for (;;) {
        const page = await call('GET', `/changes?consumer=workers&partition=${partition}&limit=7&wait=1`);
        expect(page.status).toBe(200);
        expect(page.body.partition).toBe(partition);
        for (const item of page.body.data as Item[]) seen.push({ partition, run, item });
        handled += (page.body.data as Item[]).length;
        // Stopped between applying a page and committing it: its next run reads that page again.
        if (crashAfter !== undefined && handled >= crashAfter) return;
        const committed = await call('POST', '/changes/commit', { consumer: 'workers', partition, cursor: page.body.nextCursor });
        expect(committed.status).toBe(200);
        if (!writing && page.body.nextCursor === (await head()) && (page.body.data as Item[]).length === 0) return;
      }
    }

    const running = [worker(0, 0), worker(1, 0, stopAfter), worker(2, 0)];
    // The writes come while the workers read: five rounds, each resource changed once a round.
    for (let round = 0; round < 5; round += 1) await write(round % 2 === 0 ? resources : [...resources].reverse());
    const stopped = running[1];
    await stopped;
    const committedAtStop = (await call('GET', '/admin/consumers/workers')).body.positions[1].cursor as string;
    // Whatever the stopped worker read but did not commit is handed again to the restarted one.
    const restarted = worker(1, 1);
    writing = false;
    await Promise.all([running[0], running[2], restarted]);

    const newest = BigInt(await head());
    const expected = (
      await service.pool.query<{ position: string; type: string; resource_id: string; sequence: number }>(
        'SELECT position::text AS position, type, resource_id, sequence FROM change WHERE position > $1 ORDER BY change.position',
        [from.toString()],
      )
    ).rows;
    expect(expected).toHaveLength(resources.length * 5);
    expect(BigInt(expected[expected.length - 1].position)).toBe(newest);
    // Every change seen at least once, by the partition its resource falls in.
    const seenCursors = new Set(seen.map((s) => s.item.cursor));
    expect(expected.filter((row) => !seenCursors.has(row.position))).toEqual([]);
    for (const { partition, item } of seen) {
      expect({ id: item.id, partition }).toEqual({
        id: item.id,
        partition: partitionOf(item.type.startsWith('post.') ? 'post' : 'account', item.id, 3),
      });
    }
    // Each resource in one partition only, and all three partitions used.
    const partitionsOf = new Map<string, Set<number>>();
    for (const { partition, item } of seen)
      partitionsOf.set(`${item.type}:${item.id}`, (partitionsOf.get(`${item.type}:${item.id}`) ?? new Set()).add(partition));
    expect([...partitionsOf.values()].filter((p) => p.size > 1)).toEqual([]);
    expect(new Set(seen.map((s) => s.partition))).toEqual(new Set([0, 1, 2]));
    // Per resource, within each worker's run, sequence never goes down (a restart reads again from its commit).
    const lastOfRun = new Map<string, number>();
    for (const { run, partition, item } of seen) {
      const key = `${partition}/${run}/${item.type}:${item.id}`;
      expect({ key, sequence: item.sequence }).toEqual({ key, sequence: Math.max(item.sequence, lastOfRun.get(key) ?? 0) });
      lastOfRun.set(key, item.sequence);
    }
    // The restarted worker began at the stopped one's committed position: what came after it, again, nothing before.
    const rerun = seen.filter((s) => s.run === 1);
    expect(rerun.length).toBeGreaterThan(0);
    expect(BigInt(rerun[0].item.cursor)).toBeGreaterThan(BigInt(committedAtStop));
    const stoppedUncommitted = seen.filter((s) => s.partition === 1 && s.run === 0 && BigInt(s.item.cursor) > BigInt(committedAtStop));
    expect(stoppedUncommitted.length).toBeGreaterThan(0);
    for (const s of stoppedUncommitted) expect(rerun.some((r) => r.item.cursor === s.item.cursor)).toBe(true);
    // Each one's last sequence is the last written.
    const lastSeen = new Map<string, number>();
    for (const { item } of seen)
      lastSeen.set(`${item.type.split('.')[0]}:${item.id}`, Math.max(item.sequence, lastSeen.get(`${item.type.split('.')[0]}:${item.id}`) ?? 0));
    for (const key of resources) expect({ key, sequence: lastSeen.get(key) }).toEqual({ key, sequence: sequences.get(key) });

    // Caught up: every partition at the head, no lag, here and on /metrics.
    const shown = (await call('GET', '/admin/consumers/workers')).body;
    expect((shown.positions as { cursor: string; lag: unknown }[]).map((p) => [p.cursor, p.lag])).toEqual(
      [0, 1, 2].map(() => [newest.toString(), { entries: 0, seconds: 0 }]),
    );
    expect((await metrics()).get('pozy_sync_consumer_lag_entries{consumer="workers"}')).toBe(0);
  }, 180_000);

  it('refuses bad input on every endpoint, each with a clear JSON body, and stores nothing', async () => {
    const consumersBefore = await count('SELECT count(*)::int AS n FROM consumer');
    const partitionsBefore = (await service.pool.query('SELECT * FROM consumer_partition ORDER BY consumer_name, partition')).rows;
    const refused = async (answer: Promise<Answer>, status: number, error: string, mentions?: string) => {
      const { status: got, body } = await answer;
      expect({ status: got, error: body.error }).toEqual({ status, error });
      expect(body.message).toEqual(expect.any(String));
      if (mentions) expect(body.message).toContain(mentions);
    };
    const big = JSON.stringify({ name: 'big', profileIds: ['x'.repeat(1_100_000)] });
    // POST /admin/consumers
    await refused(call('POST', '/admin/consumers', '{"name": "x",'), 400, 'malformed_json');
    await refused(call('POST', '/admin/consumers', big), 413, 'payload_too_large');
    await refused(call('POST', '/admin/consumers', { name: 'anon' }, { 'content-type': 'application/json' }), 401, 'missing_token');
    await refused(
      call('POST', '/admin/consumers', { name: 'wrong' }, { authorization: 'Bearer nope', 'content-type': 'application/json' }),
      403,
      'invalid_token',
    );
    await refused(call('POST', '/admin/consumers', { name: 'Bad Name' }), 400, 'invalid_request', 'name');
    await refused(call('POST', '/admin/consumers', {}), 400, 'invalid_request', 'name');
    await refused(call('POST', '/admin/consumers', { name: 'p0', partitions: 0 }), 400, 'invalid_request', 'partitions');
    await refused(call('POST', '/admin/consumers', { name: 'p65', partitions: 65 }), 400, 'invalid_request', 'partitions');
    await refused(call('POST', '/admin/consumers', { name: 'pstr', partitions: '3' }), 400, 'invalid_request', 'partitions');
    await refused(call('POST', '/admin/consumers', { name: 'types', types: ['post.created'] }), 400, 'invalid_request', 'types');
    await refused(call('POST', '/admin/consumers', { name: 'ws', workspaces: ['Not A Workspace'] }), 400, 'invalid_request', 'workspaces');
    await refused(call('POST', '/admin/consumers', { name: 'extra', cursor: '5' }), 400, 'invalid_request', 'cursor');
    // GET and DELETE /admin/consumers/:name, GET /admin/consumers
    await refused(call('GET', '/admin/consumers/nobody'), 404, 'not_found', 'nobody');
    await refused(call('GET', '/admin/consumers/Bad%20Name'), 400, 'invalid_request', 'name');
    await refused(call('GET', '/admin/consumers', undefined, {}), 401, 'missing_token');
    await refused(call('GET', '/admin/consumers?cursor=zzz'), 400, 'invalid_request', 'cursor');
    await refused(call('DELETE', '/admin/consumers/nobody'), 404, 'not_found');
    await refused(call('DELETE', '/admin/consumers/workers', undefined, { authorization: 'Bearer nope' }), 403, 'invalid_token');
    // GET /changes?consumer=
    await refused(call('GET', '/changes?consumer=nobody'), 404, 'not_found', 'nobody');
    await refused(call('GET', '/changes?consumer=workers'), 400, 'invalid_request', 'partition');
    await refused(call('GET', '/changes?consumer=workers&partition=3'), 400, 'invalid_request', 'partition');
    await refused(call('GET', '/changes?consumer=workers&partition=-1'), 400, 'invalid_request', 'partition');
    await refused(call('GET', '/changes?consumer=workers&partition=one'), 400, 'invalid_request', 'partition');
    await refused(call('GET', '/changes?consumer=replay&partition=1'), 400, 'invalid_request', 'partition');
    await refused(call('GET', '/changes?consumer=replay&after=1'), 400, 'invalid_request', 'after');
    await refused(call('GET', '/changes?consumer=replay&types=post.changed'), 400, 'invalid_request', 'types');
    await refused(call('GET', '/changes?partition=0'), 400, 'invalid_request', 'partition');
    await refused(call('GET', '/changes?consumer=Bad%20Name'), 400, 'invalid_request', 'consumer');
    // POST /changes/commit
    const top = await head();
    await refused(call('POST', '/changes/commit', '{"consumer": '), 400, 'malformed_json');
    await refused(call('POST', '/changes/commit', JSON.stringify({ consumer: 'replay', cursor: '1'.repeat(1_100_000) })), 413, 'payload_too_large');
    await refused(call('POST', '/changes/commit', { consumer: 'nobody', cursor: top }), 404, 'not_found');
    await refused(call('POST', '/changes/commit', { consumer: 'replay', cursor: (BigInt(top) + 1n).toString() }), 400, 'cursor_beyond_head', top);
    await refused(call('POST', '/changes/commit', { consumer: 'replay', cursor: '1' }), 409, 'cursor_behind_committed');
    await refused(call('POST', '/changes/commit', { consumer: 'workers', cursor: top }), 400, 'invalid_request', 'partition');
    await refused(call('POST', '/changes/commit', { consumer: 'workers', partition: 3, cursor: top }), 400, 'invalid_request', 'partition');
    await refused(call('POST', '/changes/commit', { consumer: 'workers', partition: '1', cursor: top }), 400, 'invalid_request', 'partition');
    await refused(call('POST', '/changes/commit', { consumer: 'replay', cursor: 12 }), 400, 'invalid_request', 'cursor');
    await refused(call('POST', '/changes/commit', { consumer: 'replay', cursor: '-1' }), 400, 'invalid_request', 'cursor');
    await refused(call('POST', '/changes/commit', { cursor: top }), 400, 'invalid_request', 'consumer');

    expect(await count('SELECT count(*)::int AS n FROM consumer')).toBe(consumersBefore);
    expect((await service.pool.query('SELECT * FROM consumer_partition ORDER BY consumer_name, partition')).rows).toEqual(partitionsBefore);
  });

  it('read tokens: one for some workspaces reads only consumers within them; one for named consumers reads and commits only those', async () => {
    await write(['post:acme-1'], 'acme');
    expect((await call('POST', '/admin/consumers', { name: 'acme-only', workspaces: ['acme'] })).status).toBe(201);
    const acme = (await call('POST', '/admin/tokens', { name: 'acme reader', workspaces: ['acme'] })).body.token as string;
    const limited = await call('POST', '/admin/tokens', { name: 'replay worker', workspaces: '*', consumers: ['replay'] });
    expect(limited.status).toBe(201);
    expect(limited.body.consumers).toEqual(['replay']);
    const replayOnly = limited.body.token as string;
    await refused400(call('POST', '/admin/tokens', { name: 'bad', workspaces: '*', consumers: ['Not A Name'] }));
    const as = (token: string) => ({ authorization: `Bearer ${token}`, 'content-type': 'application/json' });

    await waitFor('the tokens honoured', async () =>
      (await call('GET', '/changes?consumer=acme-only', undefined, as(acme))).status === 200 ? true : undefined,
    );
    // Within its workspaces: readable; every workspace, or another's: as if it did not exist.
    expect((await call('GET', '/changes?consumer=replay', undefined, as(acme))).status).toBe(404);
    expect((await call('POST', '/changes/commit', { consumer: 'replay', cursor: await head() }, as(acme))).status).toBe(404);

    await waitFor('the limited token honoured', async () =>
      (await call('GET', '/changes?consumer=replay', undefined, as(replayOnly))).status === 200 ? true : undefined,
    );
    const other = await call('GET', '/changes?consumer=laggard', undefined, as(replayOnly));
    expect({ status: other.status, error: other.body.error }).toEqual({ status: 403, error: 'consumer_not_allowed' });
    for (const path of ['/changes', '/changes?after=0', '/posts', '/accounts']) {
      const answer = await call('GET', path, undefined, as(replayOnly));
      expect({ path, status: answer.status, error: answer.body.error }).toEqual({ path, status: 403, error: 'consumer_token' });
    }
    // It reads the head (to resume after resynchronising) and commits its consumer.
    const top = (await call('GET', '/changes/head', undefined, as(replayOnly))).body.cursor as string;
    expect((await call('POST', '/changes/commit', { consumer: 'replay', cursor: top }, as(replayOnly))).status).toBe(200);
    expect((await call('POST', '/changes/commit', { consumer: 'laggard', cursor: top }, as(replayOnly))).status).toBe(403);
    // Without a token, now that reads need one.
    const anonymous = await call('GET', '/changes?consumer=replay', undefined, {});
    expect({ status: anonymous.status, error: anonymous.body.error }).toEqual({ status: 401, error: 'missing_token' });

    async function refused400(answer: Promise<Answer>) {
      const { status, body } = await answer;
      expect({ status, error: body.error }).toEqual({ status: 400, error: 'invalid_request' });
    }
  });

  it('retention holds the feed for an active consumer, and expires it past CONSUMER_MAX_LAG_DAYS: ops webhook, metric, 410, then resumes', async () => {
    // Only the holder holds: the others go.
    for (const name of ['replay', 'laggard', 'workers', 'acme-only']) expect((await call('DELETE', `/admin/consumers/${name}`)).status).toBe(204);
    expect((await call('GET', '/admin/consumers/replay')).status).toBe(404);
    expect((await call('POST', '/admin/consumers', { name: 'holder' })).status).toBe(201);
    const held = await head();
    await write(['post:h1', 'post:h2', 'account:h3', 'post:h4', 'post:h5']);
    // Everything is two days old: past CHANGE_RETENTION_DAYS (1), within CONSUMER_MAX_LAG_DAYS (3).
    await service.pool.query(`UPDATE change SET changed_at = now() - interval '2 days'`);

    const pruned = await call('POST', '/admin/retention');
    expect(pruned.status).toBe(200);
    expect(pruned.body.deleted.changes).toBe(Number(held));
    // What came before the holder's position is gone; what it has not committed is all there.
    const tooOld = await call('GET', '/changes?after=0');
    expect({ status: tooOld.status, error: tooOld.body.error }).toEqual({ status: 410, error: 'cursor_expired' });
    expect(tooOld.body.details.oldestCursor).toBe(held);
    const read = await call('GET', '/changes?consumer=holder');
    expect((read.body.data as Item[]).map((item) => item.id)).toEqual(['h1', 'h2', 'h3', 'h4', 'h5']);
    const holding = (await call('GET', '/admin/consumers/holder')).body;
    expect(holding.status).toBe('active');
    expect(holding.lag.entries).toBe(5);
    expect(holding.lag.seconds).toBeGreaterThanOrEqual(2 * DAY_S);

    // Four days old: past CONSUMER_MAX_LAG_DAYS. Retention expires it, and prunes as if it were not there.
    await service.pool.query(`UPDATE change SET changed_at = now() - interval '4 days'`);
    const expiring = await call('POST', '/admin/retention');
    expect(expiring.status).toBe(200);
    expect(expiring.body.deleted.changes).toBe(4);
    const expired = (await call('GET', '/admin/consumers/holder')).body;
    expect(expired.status).toBe('expired');
    expect(expired.positions[0]).toMatchObject({ status: 'expired', cursor: held, expiredAt: expect.any(String) });
    const gone = await call('GET', '/changes?consumer=holder');
    expect({ status: gone.status, error: gone.body.error }).toEqual({ status: 410, error: 'cursor_expired' });
    expect(gone.body.details).toEqual({ oldestCursor: expect.any(String), resync: expect.any(String) });
    expect(gone.body.message).toContain('CONSUMER_MAX_LAG_DAYS');

    const told = await waitFor(
      'ops.consumer.expired told',
      async () => {
        const received = ops.received.filter((r: Received) => r.json.type === 'ops.consumer.expired');
        return received.length > 0 ? received : undefined;
      },
      30_000,
    );
    expect(told).toHaveLength(1);
    expect((told[0].json as { data: unknown }).data).toMatchObject({
      consumer: 'holder',
      partitions: [{ partition: 0, cursor: held, oldestUncommittedAt: expect.any(String) }],
      maxLagDays: 3,
    });
    const m = await metrics();
    expect(m.get('pozy_sync_consumers{status="expired"}')).toBe(1);
    expect(metricTotal(m, 'pozy_sync_consumer_expirations_total')).toBe(1);
    // Expired consumers are no lagging series.
    expect(m.get('pozy_sync_consumer_lag_entries{consumer="holder"}')).toBeUndefined();

    // Retention again: nothing more to tell.
    expect((await call('POST', '/admin/retention')).status).toBe(200);

    // Recovery: a cursor no longer kept is refused; the head (after resynchronising) is taken, and reads go on.
    const lost = await call('POST', '/changes/commit', { consumer: 'holder', cursor: held });
    expect({ status: lost.status, error: lost.body.error }).toEqual({ status: 410, error: 'cursor_expired' });
    const top = await head();
    const resumed = await call('POST', '/changes/commit', { consumer: 'holder', cursor: top });
    expect(resumed.status).toBe(200);
    expect(resumed.body).toMatchObject({ consumer: 'holder', partition: 0, cursor: top, status: 'active', expiredAt: null });
    const next = await call('GET', '/changes?consumer=holder');
    expect(next.status).toBe(200);
    expect(next.body.data).toEqual([]);
    expect((await metrics()).get('pozy_sync_consumers{status="expired"}')).toBe(0);
    expect(ops.received.filter((r: Received) => r.json.type === 'ops.consumer.expired')).toHaveLength(1);
  });
});
