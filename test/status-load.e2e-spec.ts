import { Client } from 'pg';
import { STATUS_CONNECTION_NAME, STATUS_STATEMENT_TIMEOUT_MS } from '../src/health/sync-figures.repository';
import { AckSpool } from '../src/receive/ack-spool';
import { createTestDatabase, TestDatabase } from './support/database';
import { Harness, settled, startHarness } from './support/harness';
import { deliver, postEvent } from './support/pozy-events';
import { measured } from './support/committed';
import { StatementCounter } from './support/statement-counter';
import { RunningService, startService, waitFor } from './support/service';
import { TcpProxy } from './support/tcp-proxy';

/** Anonymous callers at once, spread over the three endpoints: far more than the test's pool (10) could serve each. */
const CLIENTS = 120;
const STATUS_PATHS = ['/', '/sync/status', '/metrics'] as const;
/** How long the database's commits are counted, idle and under the flood alone. */
const COUNT_MS = 5_000;
/** How long webhooks are sent, alone and under the flood. */
const WEBHOOKS_MS = 8_000;
/** One signed delivery this often, from one sender. */
const WEBHOOK_EVERY_MS = 40;
/** Rows already mirrored and events already received, as the review measured it: each read of the figures has work to do. */
const MIRRORED_POSTS = 90_000;
const STORED_EVENTS = 90_000;

interface Phase {
  /** Each webhook's time to its answer. */
  acks: number[];
  webhookStatuses: number[];
  spooled: number;
  /** Status answers by HTTP status. */
  statusAnswers: Map<number, number>;
  /** The most connections seen reading the status at once (pg_stat_activity, sampled). */
  statusConnections: number;
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? NaN;
};
const ms = (values: number[]) => `${percentile(values, 50).toFixed(0)}/${percentile(values, 99).toFixed(0)} ms`;
const total = (answers: Map<number, number>) => [...answers.values()].reduce((sum, n) => sum + n, 0);

describe('GET /, /sync/status and /metrics flooded by anonymous callers while webhooks arrive', () => {
  let db: TestDatabase;
  let harness: Harness;
  /** On the server's own database: its statements are not the test database's. */
  let stats: Client;
  let postIds: string[];
  /** Webhooks sent so far: each names a post none before it named. */
  let sent = 0;
  /** Readings of the figures this process began: each opens its snapshot naming the connection (sync-figures.repository.ts). */
  const readings = new StatementCounter(new RegExp(`application_name = '${STATUS_CONNECTION_NAME}'`));

  beforeAll(async () => {
    db = await createTestDatabase('status_load');
    // The whole service (receiver, worker, dispatcher) against the simulator; the test sends the webhooks itself.
    harness = await startHarness(db.url, { deliver: false, before: (sim) => sim.world.seedExisting({ posts: 600, accounts: 20 }) });
    postIds = harness.sim.world.listPosts().map((post) => post._id);
    const seed = new Client({ connectionString: db.url });
    await seed.connect();
    try {
      // Posts of another workspace's past (ids the simulator never answers for), and a month of their events.
      await seed.query(
        `INSERT INTO post (workspace_id, id, status, content, platforms, account_ids, platform_names, pozy_created_at, pozy_updated_at,
                           synced_at, read_started_at, read_id, deleted_at, sequence)
         SELECT 'default', 'load_' || lpad(i::text, 7, '0'), 'published', 'an older post ' || i, '[]'::jsonb, '{}', '{}',
                now() - interval '40 days', now() - interval '40 days', now() - interval '1 day', now() - interval '1 day',
                gen_random_uuid(), CASE WHEN i % 10 = 0 THEN now() - interval '1 day' END, 1
           FROM generate_series(1, ${MIRRORED_POSTS}) i`,
      );
      await seed.query(
        `INSERT INTO pozy_event (workspace_id, id, type, payload, "timestamp", delivery_id, attempt, resource_type, resource_id, received_at)
         SELECT 'default', 'evt_load_' || i, 'post.published', '{}'::jsonb, t, 'dlv_load_' || i, 1, 'post',
                'load_' || lpad((1 + i % ${MIRRORED_POSTS})::text, 7, '0'), t
           FROM (SELECT i, now() - interval '30 days' + i * interval '30 days' / ${STORED_EVENTS} AS t
                   FROM generate_series(1, ${STORED_EVENTS}) i) s`,
      );
      await seed.query('VACUUM ANALYZE post, pozy_event');
    } finally {
      // Ending the session reports its counts now, not during a phase.
      await seed.end();
    }
    stats = new Client({ connectionString: process.env.TEST_DATABASE_URL });
    await stats.connect();
  }, 120_000);

  afterAll(async () => {
    readings.stop();
    await stats?.end();
    await harness?.close();
    await db?.drop();
  });

  const statusConnections = async () =>
    Number(
      (
        await stats.query<{ n: string }>(
          `SELECT count(*) AS n FROM pg_stat_activity WHERE datname = $1 AND application_name = $2 AND state <> 'idle'`,
          [db.name, STATUS_CONNECTION_NAME],
        )
      ).rows[0].n,
    );

  async function phase(lengthMs: number, load: { webhooks: boolean; flood: boolean }): Promise<Phase> {
    const result: Phase = { acks: [], webhookStatuses: [], spooled: 0, statusAnswers: new Map(), statusConnections: 0 };
    const base = harness.service.baseUrl;
    const started = Date.now();
    const running = () => Date.now() - started < lengthMs;
    const sender = async () => {
      for (let i = 0; running(); i++) {
        const next = started + (i + 1) * WEBHOOK_EVERY_MS;
        const sentAt = performance.now();
        const answer = await deliver(base, postEvent(postIds[sent++ % postIds.length]));
        result.acks.push(performance.now() - sentAt);
        result.webhookStatuses.push(answer.status);
        if (answer.body.spooled === true) result.spooled += 1;
        await new Promise((resolve) => setTimeout(resolve, Math.max(0, next - Date.now())));
      }
    };
    const caller = async (c: number) => {
      for (let i = 0; running(); i++) {
        const response = await fetch(`${base}${STATUS_PATHS[(c + i) % STATUS_PATHS.length]}`);
        await response.arrayBuffer();
        result.statusAnswers.set(response.status, (result.statusAnswers.get(response.status) ?? 0) + 1);
      }
    };
    const sampler = async () => {
      while (running()) {
        result.statusConnections = Math.max(result.statusConnections, await statusConnections());
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };
    await Promise.all([
      ...(load.webhooks ? [sender()] : []),
      ...(load.flood ? [...Array.from({ length: CLIENTS }, (_, c) => caller(c)), sampler()] : []),
      new Promise((resolve) => setTimeout(resolve, lengthMs)),
    ]);
    return result;
  }

  it('reads the figures about once a second on one connection for every caller, and never makes a webhook wait for them', async () => {
    // Transactions the test database committed (pg_stat_database, read from another database), each phase counted up
    // to when PostgreSQL has reported its last commits.
    const idleCount = await measured(stats, db.name, () => phase(COUNT_MS, { webhooks: false, flood: false }));
    const floodCount = await measured(
      stats,
      db.name,
      async () => {
        readings.start();
        const result = await phase(COUNT_MS, { webhooks: false, flood: true });
        return { ...result, readings: readings.total() };
      },
      true,
    );
    const idle = { ...idleCount.result, commits: idleCount.total };
    const floodAlone = { ...floodCount.result, commits: floodCount.total };
    const quiet = await phase(WEBHOOKS_MS, { webhooks: true, flood: false });
    const flooded = await phase(WEBHOOKS_MS, { webhooks: true, flood: true });
    await settled(harness);

    process.stdout.write(
      `status-load: webhook ack p50/p99 ${ms(quiet.acks)} alone, ${ms(flooded.acks)} beside ${CLIENTS} status callers ` +
        `(${total(flooded.statusAnswers)} answers); commits in ${COUNT_MS / 1000} s: ${idle.commits} idle, ` +
        `${floodAlone.commits} under ${total(floodAlone.statusAnswers)} status answers (${floodAlone.readings} readings); ` +
        `status connections at once: ${floodAlone.statusConnections}, ${flooded.statusConnections}\n`,
    );

    for (const p of [quiet, flooded]) {
      expect(p.webhookStatuses.filter((status) => status !== 200)).toEqual([]);
      expect(p.spooled).toBe(0);
    }
    expect(harness.service.app.get(AckSpool).counts()).toMatchObject({ pending: 0, dead: 0 });
    for (const p of [floodAlone, flooded]) {
      // Every caller was answered, and answered 200.
      expect([...p.statusAnswers.keys()]).toEqual([200]);
      expect(total(p.statusAnswers)).toBeGreaterThan(CLIENTS);
      // Never two connections reading the figures at once (a reading shorter than the sampler's 20 ms may go unseen).
      expect(p.statusConnections).toBeLessThanOrEqual(1);
    }
    // However many callers: a reading of the figures at most once a second (STATUS_CACHE_MS), counted from the
    // statements the service sent, one more for a second begun when the phase ended.
    expect(floodAlone.readings).toBeGreaterThan(0);
    expect(floodAlone.readings).toBeLessThanOrEqual(COUNT_MS / 1_000 + 1);
    // And what the database committed beyond the service's idle loops (whose own timers make that count vary by a
    // dozen from one window to the next) stays far below one transaction an answer, which an unshared reading costs
    // several times over.
    expect(floodAlone.commits - idle.commits).toBeLessThan(total(floodAlone.statusAnswers) / 4);
  }, 180_000);
});

describe('a status statement that runs past its time limit', () => {
  let db: TestDatabase;
  let service: RunningService;

  beforeAll(async () => {
    db = await createTestDatabase('status_timeout');
    service = await startService(db.url, { ROLE: 'api' });
  });

  afterAll(async () => {
    await service?.close();
    await db?.drop();
  });

  const get = async (path: string) => {
    // Bounded here too: a status read that waits for the lock instead would hold the test until it is released.
    const response = await fetch(`${service.baseUrl}${path}`, { signal: AbortSignal.timeout(20_000) });
    const text = await response.text();
    return { status: response.status, type: response.headers.get('content-type'), retryAfter: response.headers.get('retry-after'), text };
  };

  it('answers 503 status_timeout in JSON on all three endpoints, while webhooks go on, and the figures once it passes', async () => {
    // The 503s are expected: their request lines (logged as errors) are not the test's output.
    const requestLog = service.app.getHttpAdapter().getInstance().log;
    const level = requestLog.level;
    requestLog.level = 'fatal';
    // A table the figures read, locked the way a migration or a VACUUM FULL would: their statement waits on it.
    const locker = new Client({ connectionString: db.url });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE dead_letter IN ACCESS EXCLUSIVE MODE');
      const answers = await Promise.all(['/sync/status', '/', '/metrics'].map(get));
      for (const answer of answers) {
        expect(answer).toMatchObject({ status: 503, type: 'application/json; charset=utf-8', retryAfter: '2' });
        expect(JSON.parse(answer.text)).toEqual({
          statusCode: 503,
          error: 'status_timeout',
          message: `Reading the status figures took longer than ${STATUS_STATEMENT_TIMEOUT_MS} ms (the database is busy or a table is locked); retry shortly`,
        });
      }
      const webhook = await deliver(service.baseUrl, postEvent('66aa01f3c2b1e4d5f6a7b8c9'));
      expect(webhook.status).toBe(200);
      expect(webhook.body.spooled).toBeUndefined();
    } finally {
      await locker.query('ROLLBACK');
      await locker.end();
    }
    const status = await waitFor('the figures once the lock is gone', async () => {
      const answer = await get('/sync/status');
      return answer.status === 200 ? (JSON.parse(answer.text) as { events: { received: number } }) : undefined;
    });
    requestLog.level = level;
    expect(status.events.received).toBe(1);
  }, 60_000);
});

describe('a database that stops answering in the middle of a status reading', () => {
  let db: TestDatabase;
  let proxy: TcpProxy;
  let service: RunningService;

  beforeAll(async () => {
    db = await createTestDatabase('status_stalled');
    const url = new URL(db.url);
    proxy = await TcpProxy.start({ host: url.hostname, port: Number(url.port || 5432) });
    service = await startService(proxy.url(db.url), { ROLE: 'api', STATUS_CACHE_MS: '0' });
  });

  afterAll(async () => {
    // Cut the stalled connections first: the pool then closes at once.
    proxy?.set('blackhole');
    proxy?.set('pass');
    await service?.close();
    await proxy?.stop();
    await db?.drop();
  });

  it('answers 503 status_timeout within its deadline instead of holding every caller', async () => {
    const get = async () => {
      const response = await fetch(`${service.baseUrl}/sync/status`, { signal: AbortSignal.timeout(30_000) });
      return { status: response.status, retryAfter: response.headers.get('retry-after'), body: (await response.json()) as Record<string, unknown> };
    };
    expect((await get()).status).toBe(200);
    const requestLog = service.app.getHttpAdapter().getInstance().log;
    const level = requestLog.level;
    requestLog.level = 'fatal';
    try {
      proxy.set('stall');
      const answers = await Promise.all([get(), get(), get()]);
      for (const answer of answers) {
        expect(answer).toEqual({ status: 503, retryAfter: '2', body: expect.objectContaining({ statusCode: 503, error: 'status_timeout' }) });
      }
    } finally {
      requestLog.level = level;
    }
  }, 60_000);
});
