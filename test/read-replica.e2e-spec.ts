import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { postsSharingTwoWords, whileTableLocked } from './support/bulk-load';
import { HARNESS_ADMIN_TOKEN, Harness, startHarness } from './support/harness';
import { metricTotal, parseMetrics } from './support/metrics';
import { RunningService, startService, waitFor } from './support/service';
import { postgresBinDir, startStreamingPair, StreamingPair } from './support/streaming-replica';

/**
 * DATABASE_READ_URL against a real streaming replica: this test starts its own primary and a hot standby made from it
 * with pg_basebackup (PostgreSQL's own tools, run as `postgres` when the test runs as root), and the service reads
 * from the standby. Replay paused on the standby proves which server answered.
 */
const BIN = postgresBinDir();
// Without PostgreSQL's server tools they are skipped, and say so; under CI (.ci/run), their absence fails them.
const maybe = BIN || process.env.CI ? describe : describe.skip;
if (!BIN) {
  process.stderr.write(
    `read replica tests ${process.env.CI ? 'FAIL' : 'skipped'}: no PostgreSQL with initdb, pg_ctl and pg_basebackup (apt-get install postgresql)\n`,
  );
}

const LAG = 'x-replica-lag-ms';
const ADMIN = { authorization: `Bearer ${HARNESS_ADMIN_TOKEN}` };

interface Answer {
  status: number;
  body: Record<string, unknown>;
  /** X-Replica-Lag-Ms as a number; undefined when absent. */
  lag: number | undefined;
}

async function get(service: RunningService, path: string): Promise<Answer> {
  const response = await fetch(`${service.baseUrl}${path}`);
  const lag = response.headers.get(LAG);
  return { status: response.status, body: (await response.json()) as Record<string, unknown>, lag: lag === null ? undefined : Number(lag) };
}

maybe('read replica (DATABASE_READ_URL, a real streaming standby)', () => {
  let pair: StreamingPair;
  let harness: Harness;
  const service = () => harness.service;
  const world = () => harness.sim.world;

  beforeAll(async () => {
    pair = await startStreamingPair(BIN!);
    const admin = new Client({ connectionString: pair.primaryUrl('postgres') });
    await admin.connect();
    await admin.query('CREATE DATABASE pozy');
    await admin.end();
    // Only the admin API writes the mirror here: no webhook deliveries.
    harness = await startHarness(pair.primaryUrl('pozy'), { deliver: false, env: { DATABASE_READ_URL: pair.standbyUrl('pozy') } });
  }, 120_000);

  afterAll(async () => {
    await harness?.close();
    await pair?.stop();
  }, 60_000);

  /** A post created in Pozy, written to the mirror (on the primary) through the admin API, as a consumer would. */
  async function resyncedPost(content: string): Promise<string> {
    const profile = world().createProfile(`Brand ${randomUUID().slice(0, 6)}`);
    const account = world().connectAccount(profile._id, 'instagram', 'brand');
    const post = world().createPost({ content, accountIds: [account._id] });
    const resync = await fetch(`${service().baseUrl}/admin/resync/posts/${post._id}`, { method: 'POST', headers: ADMIN });
    expect(resync.status).toBe(202);
    // The primary has it once a strong read finds it; those never carry the lag header.
    await waitFor('the post on the primary', async () => {
      const answer = await get(service(), `/posts/${post._id}?consistency=strong`);
      expect(answer.lag).toBeUndefined();
      return answer.status === 200 ? answer : undefined;
    });
    return post._id;
  }

  async function replayPaused(): Promise<void> {
    await pair.onStandby('SELECT pg_wal_replay_pause()');
    await waitFor('replay paused', async () => {
      const [row] = await pair.onStandby<{ state: string }>('SELECT pg_get_wal_replay_pause_state() AS state');
      return row.state === 'paused' ? true : undefined;
    });
  }

  it('reads a row written on the primary through the replica, with a small lag header', async () => {
    const id = await resyncedPost('through the replica');

    const answer = await waitFor('the post on the replica', async () => {
      const read = await get(service(), `/posts/${id}`);
      return read.status === 200 ? read : undefined;
    });
    expect(answer.body).toMatchObject({ id, content: 'through the replica', deletedAt: null });
    expect(answer.lag).toBeGreaterThanOrEqual(0);
    expect(answer.lag).toBeLessThan(2_000);
    const list = await get(service(), '/posts?consistency=eventual');
    expect(list.status).toBe(200);
    expect((list.body.data as Array<{ id: string }>).map((post) => post.id)).toContain(id);
    expect(list.lag).toBeGreaterThanOrEqual(0);
  });

  it('serves eventual reads from the replica (a fresh write is not there while replay is paused) and strong reads from the primary', async () => {
    const pausedAt = Date.now();
    await replayPaused();
    try {
      const id = await resyncedPost('paused');

      // From the replica: not there yet, and the answer says how far behind it is.
      const eventual = await get(service(), `/posts/${id}`);
      expect(eventual).toMatchObject({ status: 404, body: { error: 'not_found' } });
      expect(eventual.lag).toBeGreaterThanOrEqual(0);
      const eventualList = await get(service(), '/posts?limit=500');
      expect(eventualList.status).toBe(200);
      expect((eventualList.body.data as Array<{ id: string }>).map((post) => post.id)).not.toContain(id);
      // From the primary: there, and no lag header.
      const strong = await get(service(), `/posts/${id}?consistency=strong`);
      expect(strong).toMatchObject({ status: 200, body: { id, content: 'paused' }, lag: undefined });
      const strongList = await get(service(), '/posts?limit=500&consistency=strong');
      expect(strongList.lag).toBeUndefined();
      expect((strongList.body.data as Array<{ id: string }>).map((post) => post.id)).toContain(id);

      // The lag grows while replay stands still (the service's own writes move the primary on meanwhile), and stays
      // plausible: never more than the time since replay was paused.
      const first = (await get(service(), `/posts/${id}`)).lag!;
      const later = await waitFor('the lag to grow', async () => {
        const read = await get(service(), `/posts/${id}`);
        return read.lag! >= first + 500 ? read : undefined;
      });
      expect(later.status).toBe(404);
      expect(later.lag).toBeLessThanOrEqual(Date.now() - pausedAt);
    } finally {
      await pair.onStandby('SELECT pg_wal_replay_resume()');
    }
  });

  it('catches up once replay resumes: the post is read from the replica, and the lag is back near 0', async () => {
    await replayPaused();
    let id: string;
    try {
      id = await resyncedPost('after resume');
      expect((await get(service(), `/posts/${id}`)).status).toBe(404);
    } finally {
      await pair.onStandby('SELECT pg_wal_replay_resume()');
    }
    const answer = await waitFor('the replica to catch up', async () => {
      const read = await get(service(), `/posts/${id}`);
      return read.status === 200 && read.lag! < 1_000 ? read : undefined;
    });
    expect(answer.body).toMatchObject({ id, content: 'after resume' });
  });

  it('serves the change feed from the replica: a change placed while replay is paused is only on the primary, and a waiting long poll gets it once replay resumes', async () => {
    const head = await waitFor('the feed on the replica to catch up', async () => {
      const [replica, primary] = [await get(service(), '/changes/head'), await get(service(), '/changes/head?consistency=strong')];
      return replica.body.cursor === primary.body.cursor ? replica : undefined;
    });
    expect(head.lag).toBeGreaterThanOrEqual(0);
    const from = head.body.cursor as string;
    await replayPaused();
    let waiting: Promise<Answer> | undefined;
    try {
      const id = await resyncedPost('fed while paused');
      // On the primary, the change is placed and readable; the replica does not have it yet.
      const strong = await waitFor('the change placed on the primary', async () => {
        const read = await get(service(), `/changes?after=${from}&consistency=strong`);
        return (read.body.data as unknown[]).length > 0 ? read : undefined;
      });
      expect(strong.lag).toBeUndefined();
      expect((strong.body.data as Array<{ id: string }>).map((change) => change.id)).toContain(id);
      const eventual = await get(service(), `/changes?after=${from}`);
      expect(eventual).toMatchObject({ status: 200, body: { data: [], nextCursor: from } });
      expect(eventual.lag).toBeGreaterThanOrEqual(0);
      // A long poll on the replica waits for it.
      waiting = get(service(), `/changes?after=${from}&wait=30`);
    } finally {
      await pair.onStandby('SELECT pg_wal_replay_resume()');
    }
    const answer = await waiting;
    expect(answer.status).toBe(200);
    expect((answer.body.data as Array<{ id: string }>).length).toBeGreaterThan(0);
    expect(answer.lag).toBeGreaterThanOrEqual(0);
  });

  it('reads accounts from the replica too, and answers consistency=strong from the primary', async () => {
    const profile = world().createProfile(`Brand ${randomUUID().slice(0, 6)}`);
    const account = world().connectAccount(profile._id, 'linkedin', 'replica');
    const resync = await fetch(`${service().baseUrl}/admin/resync/profiles/${profile._id}/accounts`, { method: 'POST', headers: ADMIN });
    expect(resync.status).toBe(202);
    const eventual = await waitFor('the account on the replica', async () => {
      const read = await get(service(), `/accounts/${account._id}`);
      return read.status === 200 ? read : undefined;
    });
    expect(eventual.body).toMatchObject({ id: account._id, profileId: profile._id, platform: 'linkedin' });
    expect(eventual.lag).toBeGreaterThanOrEqual(0);
    const list = await get(service(), `/accounts?profileId=${profile._id}`);
    expect(list).toMatchObject({ status: 200, body: { data: [{ id: account._id }] } });
    expect(list.lag).toBeGreaterThanOrEqual(0);
    expect(await get(service(), `/accounts?profileId=${profile._id}&consistency=strong`)).toMatchObject({
      status: 200,
      body: { data: [{ id: account._id }] },
      lag: undefined,
    });
    expect(await get(service(), `/accounts/${account._id}?consistency=strong`)).toMatchObject({ status: 200, lag: undefined });
  });

  it.each([['/posts'], ['/posts/66aa01f3c2b1e4d5f6a7b8c9'], ['/accounts'], ['/accounts/66a9ffee00112233445566bb']])(
    'GET %s?consistency=always answers 400 naming consistency, without a lag header',
    async (path) => {
      const answer = await get(service(), `${path}?consistency=always`);
      expect(answer).toMatchObject({
        status: 400,
        body: { error: 'invalid_request', details: [{ field: 'consistency', problems: ['consistency must be one of: eventual, strong'] }] },
        lag: undefined,
      });
    },
  );

  it('documents the parameter and the header in OpenAPI', async () => {
    const document = (await (await fetch(`${service().baseUrl}/docs-json`)).json()) as {
      paths: Record<
        string,
        Record<string, { parameters: Array<{ name: string; schema: unknown }>; responses: Record<string, { headers?: object }> }>
      >;
    };
    for (const path of ['/posts', '/posts/{id}', '/accounts', '/accounts/{id}']) {
      const operation = document.paths[path].get;
      expect(operation.parameters.find((parameter) => parameter.name === 'consistency')).toMatchObject({
        schema: { enum: ['eventual', 'strong'], default: 'eventual' },
      });
      expect(operation.responses['200'].headers).toMatchObject({ 'X-Replica-Lag-Ms': { schema: { type: 'integer', minimum: 0 } } });
      expect(operation.responses['400'].headers).toBeUndefined();
    }
    expect(document.paths['/posts/{id}'].get.responses['404'].headers).toMatchObject({ 'X-Replica-Lag-Ms': expect.any(Object) });
    expect(document.paths['/sync/status'].get.responses['200'].headers).toBeUndefined();
  });

  it('keeps answering from the primary while the replica is down, counts it, and goes back to the replica when it returns', async () => {
    const id = await resyncedPost('replica down');
    await waitFor('the post on the replica', async () => ((await get(service(), `/posts/${id}`)).lag !== undefined ? true : undefined));
    const metrics = async () => parseMetrics(await (await fetch(`${service().baseUrl}/metrics`)).text());
    expect((await metrics()).get('pozy_sync_replica_available')).toBe(1);

    await pair.stopStandby();
    try {
      // Whether a read finds it down first or the sampler does, every read is answered, from the primary.
      for (let i = 0; i < 5; i++) expect(await get(service(), `/posts/${id}`)).toMatchObject({ status: 200, body: { id }, lag: undefined });
      const down = await metrics();
      expect(down.get('pozy_sync_replica_available')).toBe(0);
      expect(metricTotal(down, 'pozy_sync_replica_fallbacks_total')).toBeGreaterThanOrEqual(5);
      expect((await get(service(), '/health/ready')).status).toBe(200);
    } finally {
      await pair.startStandby();
    }
    const back = await waitFor('reads from the replica again', async () => {
      const read = await get(service(), `/posts/${id}`);
      return read.lag !== undefined ? read : undefined;
    });
    expect(back).toMatchObject({ status: 200, body: { id } });
    expect((await metrics()).get('pozy_sync_replica_available')).toBe(1);
  });

  describe('with QUERY_STATEMENT_TIMEOUT_MS', () => {
    let slow: RunningService;

    beforeAll(async () => {
      const admin = new Client({ connectionString: pair.primaryUrl('postgres') });
      await admin.connect();
      await admin.query('CREATE DATABASE pozy_slow');
      await admin.end();
      slow = await startService(pair.primaryUrl('pozy_slow'), {
        ROLE: 'api',
        DATABASE_READ_URL: pair.standbyUrl('pozy_slow'),
        QUERY_STATEMENT_TIMEOUT_MS: '300',
      });
      await slow.pool.query(postsSharingTwoWords(2_000));
      await slow.pool.query('ANALYZE post');
      await waitFor(
        'the posts on the replica',
        async () => {
          const read = await get(slow, `/posts/${(2_000).toString(16).padStart(24, '0')}`);
          return read.status === 200 && read.lag !== undefined ? true : undefined;
        },
        60_000,
      );
    }, 120_000);

    afterAll(async () => {
      await slow?.close();
    });

    it('cuts a slow read on the replica as on the primary: 503 query_timeout, not a 500 nor a second run on the primary', async () => {
      const phrase = `/posts?q=${encodeURIComponent('"coffee tea"')}&limit=1`;
      // A migration's lock on the post table, which the replica takes too once its WAL arrives: reads there wait.
      const standby = new Client({ connectionString: pair.standbyUrl('pozy_slow') });
      await standby.connect();
      const lockedThere = async () =>
        (
          await standby.query<{ n: string }>(
            "SELECT count(*) AS n FROM pg_locks l JOIN pg_class c ON c.oid = l.relation WHERE c.relname = 'post' AND l.mode = 'AccessExclusiveLock'",
          )
        ).rows[0].n !== '0';
      try {
        await whileTableLocked(
          pair.primaryUrl('pozy_slow'),
          'post',
          async () => {
            const eventual = await get(slow, phrase);
            expect(eventual).toMatchObject({ status: 503, body: { error: 'query_timeout' } });
            // Read from the replica (the header says so): cut there, by the replica pool's own timeout.
            expect(eventual.lag).toBeGreaterThanOrEqual(0);
            expect(await get(slow, `${phrase}&consistency=strong`)).toMatchObject({ status: 503, body: { error: 'query_timeout' }, lag: undefined });
          },
          lockedThere,
        );
      } finally {
        await standby.end();
      }
      expect(await get(slow, '/posts?q=coffee&limit=1')).toMatchObject({ status: 200, lag: expect.any(Number) });
    });
  });

  describe('without DATABASE_READ_URL', () => {
    let plain: RunningService;

    beforeAll(async () => {
      plain = await startService(pair.primaryUrl('pozy'), { ROLE: 'api' });
    });

    afterAll(async () => {
      await plain?.close();
    });

    it('reads the primary, with no lag header, and still accepts consistency', async () => {
      await replayPaused();
      try {
        const id = await resyncedPost('no replica');
        expect(await get(plain, `/posts/${id}`)).toMatchObject({ status: 200, body: { id }, lag: undefined });
        expect(await get(plain, `/posts/${id}?consistency=eventual`)).toMatchObject({ status: 200, lag: undefined });
        expect(await get(plain, '/accounts?consistency=strong')).toMatchObject({ status: 200, lag: undefined });
        expect((await get(plain, '/posts?consistency=bogus')).status).toBe(400);
      } finally {
        await pair.onStandby('SELECT pg_wal_replay_resume()');
      }
    });
  });
});
