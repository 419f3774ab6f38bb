import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { EXACT_COUNT_LIMIT, HOUR_SCAN_LIMIT } from '../src/health/sync-figures.repository';
import { withIndexesDeferred } from './support/bulk-load';
import { createTestDatabase, TestDatabase } from './support/database';
import { parseMetrics } from './support/metrics';
import { RunningService, startService, waitFor } from './support/service';
import { timeCalls } from './support/timing';

const POSTS = 1_000_000;
/** Every tenth post is deleted. */
const DELETED_POSTS = POSTS / 10;
// Of those, rows a 404 for a post never held left (no Pozy version): no post of the mirror's, deleted or not.
const TOMBSTONES = 100;
const ACCOUNTS = 300;
const REMOVED_ACCOUNTS = 30;
/** Received over 30 days up to two hours before the load. */
const OLD_EVENTS = 996_988;
/** Received between 50 and 26 minutes before the load: in the last hour while the test runs. */
const LAST_HOUR_EVENTS = 3_000;
/** Found by a backfill: 5 happened 30 h before the load, 7 happened 6 h before. */
const RECOVERED = { '30 hours': 5, '6 hours': 7 };
const RECOVERED_EVENTS = RECOVERED['30 hours'] + RECOVERED['6 hours'];
const EVENTS = OLD_EVENTS + LAST_HOUR_EVENTS + RECOVERED_EVENTS;
const PENDING_READS = 40;
const DELIVERED_NOTIFICATIONS = 200_000;
/** Per subscriber: the first is healthy, the second paused by the circuit breaker. */
const PENDING_NOTIFICATIONS = [13, 12];
const DEAD_NOTIFICATIONS = [4, 0];
const DEAD_LETTERS = { reconcile: 3, notification: 4, settled: 5_000 };
const JOBS = 6;
const FAILING_JOBS = 2;

/** An estimate is right when it is within 2 % of the rows of its table (ANALYZE reads a 30,000-row sample). */
const TOLERANCE = 0.02;
/** Calls timed per endpoint (fewer to time a slow build). */
const CALLS = Number(process.env.STATUS_SCALE_CALLS ?? 15);

interface StatusBody {
  queue: { pendingReads: number; oldestPendingAgeMs: number | null; jobs: number; failingJobs: number };
  events: { received: number; lastHour: number; lastReceivedAt: string | null };
  mirror: { posts: number; deletedPosts: number; accounts: number; removedAccounts: number; lastSyncedAt: string | null };
  deadLetters: { delivery: number; ack: number };
  backfill: { lastRun: unknown; gaps: unknown };
  notifications: { pending: number; oldestPendingAgeMs: number | null; pausedSubscriptions: number; subscribers: unknown };
  estimated: string[];
}

/**
 * An event's body, the same size for every event. VACUUM records each page's leftover space, and a smaller row
 * added later would fit there, among old rows: not where a real event of the same size lands, at the table's end.
 */
const PAYLOAD = (id: string, at: string) =>
  `jsonb_build_object('id', rpad(${id}, 20, '_'), 'event', 'post.published', 'timestamp', ${at},
                      'post', jsonb_build_object('id', 'post_0000001', 'status', 'published'))`;

const figureOf = (html: string, id: string) => new RegExp(`<p class="figure" id="${id}">([^<]*)</p>`).exec(html)?.[1];
const number = (text: string | undefined) => Number((text ?? '').replace(/[≈,\s]/g, ''));

interface Timing {
  what: string;
  p50: number;
  max: number;
}

async function time(what: string, call: () => Promise<Response>): Promise<Timing> {
  return { what, ...(await timeCalls(call, CALLS)) };
}

const report = (title: string, timings: Timing[]) =>
  process.stdout.write(
    `${title} (${CALLS} calls each, after one to warm up)\n` +
      timings.map((t) => `  ${t.what.padEnd(18)} p50 ${t.p50.toFixed(1).padStart(8)} ms   max ${t.max.toFixed(1).padStart(8)} ms\n`).join(''),
  );

describe('GET /sync/status, GET / and GET /metrics with a million posts and a million events', () => {
  let db: TestDatabase;
  let service: RunningService;
  /** The database's clock when the load began: every timestamp loaded is relative to it. */
  let loadedAt: Date;
  let subscriptionIds: string[];
  let backfillRunId: string;
  const get = (path: string) => fetch(`${service.baseUrl}${path}`);
  const status = async () => (await (await get('/sync/status')).json()) as StatusBody;
  const within = (actual: unknown, expected: number, tableRows: number) => {
    expect(typeof actual).toBe('number');
    expect(Math.abs((actual as number) - expected)).toBeLessThanOrEqual(TOLERANCE * tableRows);
  };

  beforeAll(async () => {
    db = await createTestDatabase('status_scale');
    // No Pozy: an api replica runs no jobs and no schedules; the service migrates the database. Every call reads
    // the figures anew (STATUS_CACHE_MS=0): what is timed is a reading at this scale, not a reading reused.
    service = await startService(db.url, { ROLE: 'api', BACKFILL_CRON: 'off', INITIAL_IMPORT: 'off', STATUS_CACHE_MS: '0' });
    const started = Date.now();
    const [posts, events] = [new Client({ connectionString: db.url }), new Client({ connectionString: db.url })];
    await Promise.all([posts.connect(), events.connect()]);
    try {
      loadedAt = (await posts.query<{ now: Date }>('SELECT now()')).rows[0].now;
      subscriptionIds = [randomUUID(), randomUUID()];
      backfillRunId = randomUUID();
      const params = [loadedAt];
      // Two connections, two cores: the mirror on one, the events and the outboxes on the other.
      await Promise.all([
        withIndexesDeferred(posts, ['post', 'account', 'reconcile_request'], async () => {
          await posts.query(
            `INSERT INTO account (workspace_id, id, profile_id, platform, username, display_name, is_active, needs_reconnection,
                                  synced_at, read_started_at, read_id, removed_at)
             SELECT 'default', 'acc_' || i, 'prof_' || (i % 20), (ARRAY['instagram', 'linkedin', 'threads', 'x'])[1 + i % 4], 'user' || i,
                    'User ' || i, true, false, $1::timestamptz - interval '5 minutes' - (${ACCOUNTS} - i) * interval '1 second',
                    $1::timestamptz - interval '6 minutes', gen_random_uuid(),
                    CASE WHEN i <= ${REMOVED_ACCOUNTS} THEN $1::timestamptz - interval '1 day' END
               FROM generate_series(1, ${ACCOUNTS}) i`,
            params,
          );
          await posts.query(
            `INSERT INTO post (workspace_id, id, status, content, scheduled_for, published_at, platforms, account_ids, platform_names,
                               pozy_created_at, pozy_updated_at, last_event_at, synced_at, read_started_at, read_id, deleted_at,
                               sequence, changed_by)
             SELECT 'default', 'post_' || lpad(i::text, 7, '0'), CASE WHEN i % 10 = 0 THEN 'deleted' ELSE 'published' END,
                    CASE WHEN i % 10 <> 0 THEN 'Spring sale starts today #' || i END, t, t,
                    CASE WHEN i % 10 = 0 THEN '[]'::jsonb
                         ELSE jsonb_build_array(jsonb_build_object('platform', 'instagram', 'accountId', 'acc_' || (1 + i % ${ACCOUNTS}),
                                                                   'status', 'published', 'platformPostId', 'ig_' || i)) END,
                    ARRAY['acc_' || (1 + i % ${ACCOUNTS})], ARRAY['instagram'], t - interval '1 day',
                    CASE WHEN i % 10 = 0 AND i <= ${TOMBSTONES * 10} THEN NULL ELSE t END, t, t, t,
                    '00000000-0000-4000-8000-000000000000', CASE WHEN i % 10 = 0 THEN t END, 1, NULL
               FROM (SELECT i, $1::timestamptz - interval '2 days' + i * interval '100 milliseconds' AS t
                       FROM generate_series(1, ${POSTS}) i) s`,
            params,
          );
          // Every post has been read once; a few reads are pending, the oldest asked for 7 minutes before the load.
          await posts.query(
            `INSERT INTO reconcile_request (workspace_id, key, resource_type, resource_id, due_at, requested_at, dispatched_at, last_read_at)
             SELECT 'default', 'post:' || id, 'post', id,
                    CASE WHEN n <= ${PENDING_READS} THEN $1::timestamptz + interval '1 day' END,
                    $1::timestamptz - interval '7 minutes' + least(n - 1, ${PENDING_READS}) * interval '1 second', synced_at, synced_at
               FROM (SELECT id, synced_at, row_number() OVER (ORDER BY id DESC) AS n FROM post) p`,
            params,
          );
        }),
        withIndexesDeferred(events, ['pozy_event', 'notification', 'dead_letter'], async () => {
          await events.query(
            `INSERT INTO pozy_event (workspace_id, id, type, payload, "timestamp", delivery_id, attempt, resource_type, resource_id, received_at)
             SELECT 'default', 'evt_' || i, 'post.published', ${PAYLOAD("'evt_' || i", 't')}, t, 'dlv_' || i, 1, 'post', 'post_' || lpad((1 + i % ${POSTS})::text, 7, '0'), t
               FROM (SELECT i, $1::timestamptz - interval '30 days' + (i - 1) * (interval '30 days' - interval '2 hours') / ${OLD_EVENTS} AS t
                       FROM generate_series(1, ${OLD_EVENTS}) i) s`,
            params,
          );
          await events.query(
            `INSERT INTO backfill_run (workspace_id, id, trigger, status, started_at, finished_at, rows_scanned, events_recovered)
             VALUES ('default', $2, 'schedule', 'succeeded', $1::timestamptz - interval '2 hours', $1::timestamptz - interval '2 hours', 500, $3)`,
            [loadedAt, backfillRunId, RECOVERED_EVENTS],
          );
          for (const [ago, count] of Object.entries(RECOVERED)) {
            await events.query(
              `INSERT INTO pozy_event (workspace_id, id, type, payload, "timestamp", resource_type, resource_id, received_at, recovered_by)
               SELECT 'default', 'evt_recovered_' || $3 || '_' || i, 'post.published', '{}', $1::timestamptz - $3::interval, 'post', 'post_0000001',
                      $1::timestamptz - interval '2 hours', $2
                 FROM generate_series(1, ${count}) i`,
              [loadedAt, backfillRunId, ago],
            );
          }
          await events.query(
            `INSERT INTO pozy_event (workspace_id, id, type, payload, "timestamp", delivery_id, attempt, resource_type, resource_id, received_at)
             SELECT 'default', 'evt_recent_' || i, 'post.published', ${PAYLOAD("'evt_recent_' || i", 't')}, t, 'dlv_recent_' || i, 1,
                    'post', 'post_0000001', t
               FROM (SELECT i, $1::timestamptz - interval '50 minutes' + (i - 1) * interval '24 minutes' / (${LAST_HOUR_EVENTS} - 1) AS t
                       FROM generate_series(1, ${LAST_HOUR_EVENTS}) i) s`,
            params,
          );
          await events.query(
            `INSERT INTO subscription (id, url, secret, event_types, paused_at, paused_reason, failing_since)
             VALUES ($2, 'https://a.example.com/hooks?token=secret-a', 'whsec_a', '{post.changed}', NULL, NULL, NULL),
                    ($3, 'https://b.example.com/hooks', 'whsec_b', '{post.changed}', $1, 'every attempt failed', $1::timestamptz - interval '1 hour')`,
            [loadedAt, ...subscriptionIds],
          );
          // Delivered history, then per subscriber its pending ones (the oldest 3 minutes before the load) and dead ones.
          await events.query(
            `INSERT INTO notification (workspace_id, id, subscription_id, type, resource_key, sequence, data, created_at, state, attempts,
                                       next_attempt_at, delivered_at)
             SELECT 'default', 'msg_delivered_' || i, ($2::uuid[])[1 + i % 2], 'post.changed', 'post:post_' || lpad((1 + i % ${POSTS})::text, 7, '0'),
                    1, '{"id": "x"}', $1::timestamptz - interval '1 day', 'delivered', 1, NULL, $1::timestamptz - interval '1 day'
               FROM generate_series(1, ${DELIVERED_NOTIFICATIONS}) i`,
            [loadedAt, subscriptionIds],
          );
          for (const [s, subscriptionId] of subscriptionIds.entries()) {
            await events.query(
              `INSERT INTO notification (workspace_id, id, subscription_id, type, resource_key, sequence, data, created_at, state, attempts, next_attempt_at)
               SELECT 'default', 'msg_pending_' || $4::int || '_' || i, $2, 'post.changed', 'post:post_000000' || i, 2, '{"id": "x"}',
                      $1::timestamptz - interval '3 minutes' + i * interval '1 second', 'pending', 1, $1::timestamptz + interval '1 day'
                 FROM generate_series(1, $3::int) i`,
              [loadedAt, subscriptionId, PENDING_NOTIFICATIONS[s], s],
            );
            await events.query(
              `INSERT INTO notification (workspace_id, id, subscription_id, type, resource_key, sequence, data, created_at, state, attempts)
               SELECT 'default', 'msg_dead_' || $4::int || '_' || i, $2, 'post.changed', 'post:post_100000' || i, 2, '{"id": "x"}', $1, 'dead', 5
                 FROM generate_series(1, $3::int) i`,
              [loadedAt, subscriptionId, DEAD_NOTIFICATIONS[s], s],
            );
          }
          await events.query(
            `INSERT INTO dead_letter (workspace_id, id, queue, kind, resource_key, payload, reason, error, attempts, first_failure_at, last_failure_at,
                                      created_at, replayed_at, resolved_at)
             WITH at AS (SELECT $1::timestamptz AS t)
             SELECT 'default', gen_random_uuid(), 'delivery', CASE WHEN i % 2 = 0 THEN 'reconcile' ELSE 'notification' END,
                    'post:post_' || lpad(i::text, 7, '0'), '{}'::jsonb, 'timed out', 'timeout', 5, at.t, at.t, at.t - interval '2 days',
                    CASE WHEN i % 2 = 0 THEN at.t END, CASE WHEN i % 2 = 1 THEN at.t END
               FROM at, generate_series(1, ${DEAD_LETTERS.settled}) i
             UNION ALL
             SELECT 'default', gen_random_uuid(), 'delivery', k.kind, 'post:post_0000001', '{}'::jsonb, 'timed out', 'timeout', 5, at.t, at.t, at.t,
                    NULL::timestamptz, NULL::timestamptz
               FROM at, (SELECT 'reconcile' AS kind FROM generate_series(1, ${DEAD_LETTERS.reconcile})
                         UNION ALL SELECT 'notification' FROM generate_series(1, ${DEAD_LETTERS.notification})) k`,
            params,
          );
          await events.query(
            `SELECT graphile_worker.add_job('reconcile', json_build_object('resource', 'post', 'id', 'post_000000' || i),
                                            run_at := $1::timestamptz + interval '1 day')
               FROM generate_series(1, ${JOBS}) i`,
            params,
          );
          await events.query(
            `UPDATE graphile_worker._private_jobs SET last_error = 'Pozy timed out'
              WHERE id IN (SELECT id FROM graphile_worker._private_jobs ORDER BY id LIMIT ${FAILING_JOBS})`,
          );
        }),
      ]);
      // Statistics, the visibility map and every BRIN range summarized: a database autovacuum has been through.
      await Promise.all([
        posts.query('VACUUM ANALYZE post, account, reconcile_request'),
        events.query('VACUUM ANALYZE pozy_event, notification, dead_letter, subscription, backfill_run, graphile_worker._private_jobs'),
      ]);
    } finally {
      await Promise.all([posts.end(), events.end()]);
    }
    process.stdout.write(`status-scale: loaded ${POSTS} posts and ${EVENTS} events in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
  }, 300_000);

  afterAll(async () => {
    await service?.close();
    await db?.drop();
  });

  it('answers each of them quickly (the times are printed, not asserted)', async () => {
    report('status-scale: 1M posts, 1M events', [
      await time('GET /sync/status', () => get('/sync/status')),
      await time('GET /', () => get('/')),
      await time('GET /metrics', () => get('/metrics')),
    ]);
  });

  it("answers GET /sync/status exactly where it counts, and PostgreSQL's estimates where it says so", async () => {
    const body = await status();

    // Deleted posts are counted exactly through their own index, tombstones left out through theirs, and live ones
    // are the estimated rest of the table.
    expect(body.estimated.sort()).toEqual(['events.received', 'mirror.posts']);
    expect(body.mirror.deletedPosts).toBe(DELETED_POSTS - TOMBSTONES);
    within(body.mirror.posts, POSTS - DELETED_POSTS, POSTS);
    within(body.events.received, EVENTS, EVENTS);
    expect(body.mirror).toMatchObject({
      accounts: ACCOUNTS - REMOVED_ACCOUNTS,
      removedAccounts: REMOVED_ACCOUNTS,
      // The newest write of either table: the accounts', 5 minutes before the load.
      lastSyncedAt: new Date(loadedAt.getTime() - 5 * 60_000).toISOString(),
    });
    expect(body.events).toMatchObject({
      lastHour: LAST_HOUR_EVENTS,
      lastReceivedAt: new Date(loadedAt.getTime() - 26 * 60_000).toISOString(),
    });
    expect(body.queue).toMatchObject({ pendingReads: PENDING_READS, jobs: JOBS, failingJobs: FAILING_JOBS });
    expect(body.queue.oldestPendingAgeMs).toBeGreaterThanOrEqual(7 * 60_000);
    expect(body.deadLetters).toEqual({ delivery: DEAD_LETTERS.reconcile + DEAD_LETTERS.notification, ack: 0 });
    expect(body.backfill.lastRun).toMatchObject({ id: backfillRunId, status: 'succeeded', eventsRecovered: RECOVERED_EVENTS });
    const hourOf = (hoursAgo: number) => {
      const hour = new Date(loadedAt.getTime() - hoursAgo * 3_600_000);
      hour.setUTCMinutes(0, 0, 0);
      return hour.toISOString();
    };
    expect(body.backfill.gaps).toEqual([
      { hour: hourOf(30), events: RECOVERED['30 hours'] },
      { hour: hourOf(6), events: RECOVERED['6 hours'] },
    ]);
    expect(body.notifications).toMatchObject({
      pending: PENDING_NOTIFICATIONS[0] + PENDING_NOTIFICATIONS[1],
      pausedSubscriptions: 1,
      subscribers: [
        {
          id: subscriptionIds[0],
          origin: 'https://a.example.com',
          health: { state: 'healthy', pending: PENDING_NOTIFICATIONS[0], deadLetters: DEAD_NOTIFICATIONS[0] },
        },
        {
          id: subscriptionIds[1],
          origin: 'https://b.example.com',
          health: { state: 'paused', pending: PENDING_NOTIFICATIONS[1], deadLetters: DEAD_NOTIFICATIONS[1] },
        },
      ].sort((a, b) => a.id.localeCompare(b.id)),
    });
    expect(body.notifications.oldestPendingAgeMs).toBeGreaterThanOrEqual(3 * 60_000 - 1_000);
  });

  it('serves the same figures on the status page, estimates marked, and the last hour minute by minute', async () => {
    const response = await get('/');
    expect(response.status).toBe(200);
    const html = await response.text();

    expect(figureOf(html, 'pending-reads')).toBe(String(PENDING_READS));
    expect(figureOf(html, 'events-last-hour')).toBe(LAST_HOUR_EVENTS.toLocaleString('en-US'));
    expect(figureOf(html, 'dead-letter-count')).toBe(String(DEAD_LETTERS.reconcile + DEAD_LETTERS.notification));
    expect(figureOf(html, 'notifications-pending')).toBe(String(PENDING_NOTIFICATIONS[0] + PENDING_NOTIFICATIONS[1]));
    const mirrored = /; (≈ [\d,]+) posts, ([\d,]+) accounts mirrored/.exec(html);
    expect(mirrored).not.toBeNull();
    expect(Math.abs(number(mirrored?.[1]) - (POSTS - DELETED_POSTS))).toBeLessThanOrEqual(TOLERANCE * POSTS);
    expect(number(mirrored?.[2])).toBe(ACCOUNTS - REMOVED_ACCOUNTS);
    expect(html).toContain('id="estimates-note"');
    const bars = [...html.matchAll(/<rect [^>]*data-count="(\d+)"/g)].map((m) => Number(m[1]));
    expect(bars).toHaveLength(60);
    expect(bars.reduce((sum, n) => sum + n, 0)).toBe(LAST_HOUR_EVENTS);
  });

  it('exports the same figures to Prometheus', async () => {
    const m = parseMetrics(await (await get('/metrics')).text());

    expect(m.get('pozy_sync_reconcile_pending')).toBe(PENDING_READS);
    expect(m.get('pozy_sync_mirror_lag_seconds')).toBeGreaterThanOrEqual(7 * 60);
    expect(m.get('pozy_sync_dead_letters{queue="delivery",kind="reconcile"}')).toBe(DEAD_LETTERS.reconcile);
    expect(m.get('pozy_sync_dead_letters{queue="delivery",kind="notification"}')).toBe(DEAD_LETTERS.notification);
    expect(m.get('pozy_sync_notifications_pending')).toBe(PENDING_NOTIFICATIONS[0] + PENDING_NOTIFICATIONS[1]);
    expect(m.get('pozy_sync_notification_lag_seconds')).toBeGreaterThanOrEqual(3 * 60 - 1);
    expect(m.get('pozy_sync_subscriptions_paused')).toBe(1);
  });

  describe('with a backlog past what is counted exactly', () => {
    const BACKLOG = 150_000;
    const BURST = 40_000;
    let burstEnd: Date;

    beforeAll(async () => {
      const client = new Client({ connectionString: db.url });
      await client.connect();
      try {
        await client.query(
          `UPDATE reconcile_request SET due_at = $1::timestamptz + interval '1 day'
            WHERE key IN (SELECT key FROM reconcile_request WHERE due_at IS NULL ORDER BY key LIMIT ${BACKLOG})`,
          [loadedAt],
        );
        // 4,000 events a minute for two whole five-minute slices from 20 to 25 minutes before the load, after the
        // others in time as on disk: more than one pass reads.
        await client.query(
          `INSERT INTO pozy_event (workspace_id, id, type, payload, "timestamp", delivery_id, attempt, resource_type, resource_id, received_at)
           SELECT 'default', 'evt_burst_' || i, 'post.published', ${PAYLOAD("'evt_burst_' || i", 't')}, t, 'dlv_burst_' || i, 1, 'post', 'post_0000002', t
             FROM (SELECT i, date_bin('5 minutes', $1::timestamptz - interval '20 minutes', timestamptz '2000-01-01 00:00Z')
                             + (i - 1) * interval '10 minutes' / ${BURST} AS t
                     FROM generate_series(1, ${BURST}) i) s`,
          [loadedAt],
        );
        burstEnd = (await client.query<{ t: Date }>(`SELECT max(received_at) AS t FROM pozy_event WHERE id LIKE 'evt_burst_%'`)).rows[0].t;
        // What autovacuum does on its own: statistics of the changed table, and the new BRIN ranges summarized.
        await client.query('ANALYZE reconcile_request');
        await client.query("SELECT brin_summarize_new_values('pozy_event_received_at_idx')");
      } finally {
        await client.end();
      }
    }, 120_000);

    it('answers with estimates past the limits, still quickly', async () => {
      expect(BACKLOG).toBeGreaterThan(EXACT_COUNT_LIMIT);
      expect(BURST).toBeGreaterThan(HOUR_SCAN_LIMIT);
      report('status-scale: 150,000 pending reads, 43,000 events in the last hour', [
        await time('GET /sync/status', () => get('/sync/status')),
        await time('GET /', () => get('/')),
        await time('GET /metrics', () => get('/metrics')),
      ]);

      const body = await status();
      expect(body.estimated.sort()).toEqual(['events.lastHour', 'events.received', 'mirror.posts', 'queue.pendingReads']);
      within(body.queue.pendingReads, BACKLOG + PENDING_READS, POSTS);
      // Extrapolated from the first events read of each busy slice: rows lie in the order they arrived.
      within(body.events.lastHour, LAST_HOUR_EVENTS + BURST, LAST_HOUR_EVENTS + BURST);
      // Found by halving the last hour's window: too many events in it to read at once.
      expect(body.events.lastReceivedAt).toBe(burstEnd.toISOString());
      expect(body.queue.oldestPendingAgeMs).toBeGreaterThanOrEqual(7 * 60_000);

      const m = parseMetrics(await (await get('/metrics')).text());
      expect(Math.abs(m.get('pozy_sync_reconcile_pending')! - (BACKLOG + PENDING_READS))).toBeLessThanOrEqual(TOLERANCE * POSTS);
      const html = await (await get('/')).text();
      expect(figureOf(html, 'pending-reads')).toMatch(/^≈ /);
      expect(figureOf(html, 'events-last-hour')).toMatch(/^≈ /);
    });
  });
});

describe('GET /sync/status right after a first import, before PostgreSQL has analyzed anything', () => {
  let db: TestDatabase;
  let service: RunningService;
  const POSTS_IMPORTED = 250_000;
  const DELETED = 1_234;

  beforeAll(async () => {
    db = await createTestDatabase('status_fresh');
    service = await startService(db.url, { ROLE: 'api', BACKFILL_CRON: 'off', INITIAL_IMPORT: 'off' });
    const client = new Client({ connectionString: db.url });
    await client.connect();
    try {
      // As an import writes them, in pages: no ANALYZE, and autovacuum kept off this table for the test.
      await client.query('ALTER TABLE post SET (autovacuum_enabled = false)');
      await client.query(
        `INSERT INTO post (workspace_id, id, status, content, platforms, account_ids, platform_names, pozy_created_at, pozy_updated_at,
                           synced_at, read_started_at, read_id, deleted_at, sequence)
         SELECT 'default', lpad(to_hex(i), 24, '0'), 'published', 'a post of some length, like the real ones ' || i,
                '[{"platform":"linkedin","accountId":"acc_1","status":"published","platformPostId":"urn:li:share:1"}]'::jsonb,
                '{acc_1}', '{linkedin}', now(), now(), now(), now(), gen_random_uuid(),
                CASE WHEN i <= ${DELETED} THEN now() END, 1
           FROM generate_series(1, ${POSTS_IMPORTED}) i`,
      );
      // The statistics collector's count of live rows, which this answer may lean on, is written when a session
      // reports its counters (at most every second while busy); this load's is reported as its session ends.
    } finally {
      await client.end();
    }
  }, 120_000);

  afterAll(async () => {
    await service?.close();
    await db?.drop();
  });

  it("counts the mirror right, where PostgreSQL's planner alone would guess from pages and default selectivities", async () => {
    const { rows } = await service.pool.query<{ reltuples: number }>("SELECT reltuples FROM pg_class WHERE relname = 'post'");
    expect(rows[0].reltuples).toBe(-1);
    const body = await waitFor('the statistics of the load to be reported', async () => {
      const answer = (await (await fetch(`${service.baseUrl}/sync/status`)).json()) as StatusBody;
      return answer.mirror.posts > 0 ? answer : undefined;
    });

    expect(body.mirror.deletedPosts).toBe(DELETED);
    expect(Math.abs(body.mirror.posts - (POSTS_IMPORTED - DELETED))).toBeLessThanOrEqual(TOLERANCE * POSTS_IMPORTED);
    expect(body.estimated).toEqual(['mirror.posts']);
  });
});
