import { Client, type Pool } from 'pg';
import { ENTRY_KINDS, TimelineRepository, TimelineVersion } from '../src/admin/timeline.repository';
import { withIndexesDeferred } from './support/bulk-load';
import { createTestDatabase, TestDatabase } from './support/database';
import { explainAnalyzed, pagesTouched, recordingDatabase, rowsVisitedIn, SentStatement } from './support/explain';
import { startService } from './support/service';

const EVENTS = 10_000_000;
/** Posts the events are spread over (ten each), and the one whose timeline is read, with its own history. */
const POSTS = 1_000_000;
const TARGET = 'ffffffffffffffffffffff01';
const TARGET_EVENTS = 1_000;
const TARGET_READS = 400;
const TARGET_CHANGES = 300;
const TARGET_NOTIFICATIONS = 200;
/** Three attempts each, and one notification with 50 (an endpoint that kept failing): the page shows its first 20. */
const TARGET_ATTEMPTS = (TARGET_NOTIFICATIONS - 1) * 3 + 50;
const TARGET_LETTERS = 100;
const SUBSCRIPTION = '00000000-0000-4000-8000-000000000001';
/** Versions read since then are all kept (HISTORY_RETENTION_DAYS' default): a read with none changed nothing. */
const KEPT_SINCE = new Date(Date.now() - 30 * 86_400_000);
const post = (n: string) => `lpad(to_hex(${n} % ${POSTS}), 24, '0')`;
/** One instant for every statement of the load: a read and its version are both dated from it. */
const NOW = `timestamptz '${new Date().toISOString()}'`;
/** A read's id, the same in reconcile_read and resource_version. */
const readId = (n: string) => `md5('read ' || ${n})::uuid`;
/** The post's own rows span its last 1,000 s, each kind evenly, so that every page holds some of each. */
const every = (count: number) => `interval '${1_000_000 / count} ms'`;

/**
 * Ten million events over a million posts, a million reconciles (with the versions their writes made), a million
 * notifications with their attempts, 200,000 feed entries and 200,000 dead letters, with one post that has a history
 * of its own: a page of its timeline reads what that post holds, found through each table's resource index, never the
 * tables' size (rows and pages read, from EXPLAIN ANALYZE of the statement the repository sends). Every other of its
 * reads changed it (a version whose content differs from the one before); the others re-read what it held.
 */
const LOAD = [
  `INSERT INTO pozy_event (workspace_id, id, type, payload, timestamp, resource_type, resource_id, received_at)
     SELECT 'default', 'e' || n, 'post.published', '{}', ${NOW} - n * interval '1 ms', 'post', ${post('n')}, ${NOW} - n * interval '1 ms'
       FROM generate_series(1, ${EVENTS}) AS n`,
  `INSERT INTO pozy_event (workspace_id, id, type, payload, timestamp, resource_type, resource_id, received_at, copies)
     SELECT 'default', 'target-' || n, 'post.published', '{}', ${NOW} - n * ${every(TARGET_EVENTS)}, 'post', '${TARGET}',
            ${NOW} - n * ${every(TARGET_EVENTS)}, 1 + n % 3
       FROM generate_series(1, ${TARGET_EVENTS}) AS n`,
  `INSERT INTO reconcile_read (workspace_id, resource_key, at, sent_at, read_id, outcome, lane, status_code)
     SELECT 'default', 'post:' || ${post('n')}, ${NOW} - n * interval '10 ms', ${NOW} - n * interval '10 ms' - interval '5 ms', ${readId("'o' || n")},
            'written', 'realtime', 200
       FROM generate_series(1, 1000000) AS n`,
  `INSERT INTO resource_version (workspace_id, resource_type, resource_id, sequence, read_at, read_id, data)
     SELECT 'default', 'post', ${post('n')}, 1, ${NOW} - n * interval '10 ms' - interval '5 ms', ${readId("'o' || n")},
            jsonb_build_object('id', ${post('n')}, 'content', 'post ' || n, 'sequence', 1)
       FROM generate_series(1, 1000000) AS n`,
  `INSERT INTO reconcile_read (workspace_id, resource_key, at, sent_at, read_id, outcome, lane, status_code)
     SELECT 'default', 'post:${TARGET}', ${NOW} - n * ${every(TARGET_READS)} + interval '1 ms', ${NOW} - n * ${every(TARGET_READS)}, ${readId("'t' || n")},
            'written', 'realtime', 200
       FROM generate_series(1, ${TARGET_READS}) AS n`,
  // The target's versions: one per even read, its sequence growing with time, its content and syncedAt new each time.
  `INSERT INTO resource_version (workspace_id, resource_type, resource_id, sequence, read_at, read_id, data)
     SELECT 'default', 'post', '${TARGET}', ${TARGET_READS} + 1 - n, ${NOW} - n * ${every(TARGET_READS)}, ${readId("'t' || n")},
            jsonb_build_object('id', '${TARGET}', 'content', 'version ' || n, 'status', 'scheduled', 'sequence', ${TARGET_READS} + 1 - n,
                               'syncedAt', ${NOW} - n * ${every(TARGET_READS)})
       FROM generate_series(2, ${TARGET_READS}, 2) AS n`,
  `INSERT INTO change (workspace_id, id, position, type, resource_id, sequence, changed_at, profile_ids, platforms, data)
     SELECT 'default', n, n, 'post.changed', CASE WHEN n <= ${TARGET_CHANGES} THEN '${TARGET}' ELSE ${post('n')} END, 1,
            CASE WHEN n <= ${TARGET_CHANGES} THEN ${NOW} - n * ${every(TARGET_CHANGES)} + interval '2 ms' ELSE ${NOW} - n * interval '3 s' END,
            ARRAY['prof'], ARRAY['linkedin'], '{}'
       FROM generate_series(1, 200000) AS n`,
  `INSERT INTO subscription (id, url, secret, event_types) VALUES ('${SUBSCRIPTION}', 'https://example.com/hooks', 'whsec_x', ARRAY['post.changed'])`,
  `INSERT INTO notification (id, subscription_id, type, workspace_id, resource_key, sequence, data, created_at, state, attempts, next_attempt_at, delivered_at)
     SELECT 'msg_' || md5('o' || n), '${SUBSCRIPTION}', 'post.changed', 'default', 'post:' || ${post('n')}, 1, '{}', ${NOW} - n * interval '5 ms',
            'delivered', 1, NULL, ${NOW} - n * interval '5 ms'
       FROM generate_series(1, 1000000) AS n`,
  `INSERT INTO notification (id, subscription_id, type, workspace_id, resource_key, sequence, data, created_at, state, attempts, next_attempt_at, delivered_at)
     SELECT 'msg_' || md5('t' || n), '${SUBSCRIPTION}', 'post.changed', 'default', 'post:${TARGET}', n, '{}',
            ${NOW} - n * ${every(TARGET_NOTIFICATIONS)} + interval '3 ms', 'delivered', CASE WHEN n = 1 THEN 50 ELSE 3 END, NULL, ${NOW}
       FROM generate_series(1, ${TARGET_NOTIFICATIONS}) AS n`,
  `INSERT INTO notification_attempt (notification_id, subscription_id, attempted_at, duration_ms, status_code, outcome)
     SELECT id, subscription_id, created_at + k * interval '1 s', 5, CASE WHEN k = attempts THEN 204 ELSE 503 END,
            CASE WHEN k = attempts THEN 'delivered' ELSE 'retry' END
       FROM notification, generate_series(1, attempts) AS k`,
  `INSERT INTO dead_letter (workspace_id, id, queue, kind, resource_key, payload, reason, error, attempts, first_failure_at, last_failure_at, created_at)
     SELECT 'default', ${readId("'letter ' || n")}, 'delivery', 'reconcile',
            'post:' || CASE WHEN n <= ${TARGET_LETTERS} THEN '${TARGET}' ELSE ${post('n')} END, '{}', 'Pozy timed out', 'TimeoutError', 3,
            ${NOW} - n * interval '1 s', ${NOW} - n * interval '1 s',
            CASE WHEN n <= ${TARGET_LETTERS} THEN ${NOW} - n * ${every(TARGET_LETTERS)} + interval '4 ms' ELSE ${NOW} - n * interval '7 s' END
       FROM generate_series(1, 200000) AS n`,
];
const TABLES = ['pozy_event', 'reconcile_read', 'resource_version', 'change', 'notification', 'notification_attempt', 'dead_letter'];

describe('a timeline page on ten million events reads what the post holds, not the tables', () => {
  let db: TestDatabase;
  let pool: Pool;
  let sent: () => SentStatement[];
  let timelines: TimelineRepository;

  beforeAll(async () => {
    db = await createTestDatabase('timeline_scale');
    await (await startService(db.url, { ROLE: 'api' })).close();
    const client = new Client({ connectionString: db.url });
    await client.connect();
    try {
      await withIndexesDeferred(client, TABLES, async () => {
        for (const statement of LOAD) await client.query(statement);
      });
      await client.query(`VACUUM ANALYZE ${TABLES.join(', ')}`);
    } finally {
      await client.end();
    }
    pool = db.pool(2);
    const recording = recordingDatabase(pool);
    sent = recording.sent;
    timelines = new TimelineRepository(recording.database);
  }, 900_000);

  afterAll(async () => {
    await pool?.end();
    await db?.drop();
  });

  async function explained(): Promise<{ rows: Record<string, number>; pages: number }> {
    const [statement] = sent();
    const { plan } = await explainAnalyzed(pool, statement);
    return { rows: Object.fromEntries(TABLES.map((table) => [table, rowsVisitedIn(plan, table)])), pages: pagesTouched(plan) };
  }

  it('walks the post alone, page after page, in time order, each read with what it changed', async () => {
    const seen: string[] = [];
    const kinds = new Set<string>();
    let changed = 0;
    let after = null;
    for (let page = 0; page < 3; page += 1) {
      const rows = await timelines.page('default', { type: 'post', id: TARGET }, after, 100, KEPT_SINCE);
      expect(rows).toHaveLength(101);
      const { rows: read, pages } = await explained();
      process.stdout.write(`  page ${page + 1}: rows read ${JSON.stringify(read)}, ${pages} pages\n`);
      const entries = rows.slice(0, 100);
      const reconciles = entries.filter((r) => ENTRY_KINDS[r.rank] === 'reconcile').map((r) => r.entry);
      // The post's own rows at most, never the tables': its events (sorted by arrival), and its reads, feed entries,
      // notifications and dead letters (a page's worth when PostgreSQL walks their index; all of the post's when
      // ANALYZE's sample makes a bitmap scan and a sort look cheaper, which a post with few of them allows and the CI's
      // statistics sometimes choose). A notification's attempts are its own, found by its id. The versions: the
      // page's reconciles' alone, by index, each one version at most and the one before it.
      expect(read.pozy_event).toBeLessThanOrEqual(TARGET_EVENTS);
      expect(read.reconcile_read).toBeLessThanOrEqual(TARGET_READS);
      expect(read.change).toBeLessThanOrEqual(TARGET_CHANGES);
      expect(read.notification).toBeLessThanOrEqual(TARGET_NOTIFICATIONS);
      expect(read.notification_attempt).toBeLessThanOrEqual(2 * TARGET_ATTEMPTS);
      expect(read.dead_letter).toBeLessThanOrEqual(TARGET_LETTERS);
      expect(reconciles.length).toBeGreaterThan(0);
      expect(read.resource_version).toBeLessThanOrEqual(2 * reconciles.length);
      expect(pages).toBeLessThanOrEqual(4_000);
      // Every other read made a version, whose content differs from the one before (its sequence two less).
      for (const entry of reconciles) {
        const versions = entry.versions as TimelineVersion[];
        expect(entry.changed).toBe(versions.length > 0);
        if (versions.length > 0) {
          changed += 1;
          const [{ sequence }] = versions;
          // The post's first version has none before it to compare with.
          const previous =
            sequence === 1 ? { previousSequence: null, changedFields: null } : { previousSequence: sequence - 2, changedFields: ['content'] };
          expect(versions).toEqual([{ resource: `post:${TARGET}`, sequence, ...previous }]);
        }
      }
      for (const r of entries) kinds.add(ENTRY_KINDS[r.rank]);
      seen.push(...entries.map((r) => `${r.rank}:${r.key}`));
      const times = entries.map((r) => r.at.getTime());
      expect(times).toEqual([...times].sort((a, b) => a - b));
      after = entries[99];
    }
    expect(new Set(seen).size).toBe(300);
    expect(changed).toBeGreaterThan(0);
    expect([...kinds].sort()).toEqual(['dead_letter', 'event', 'feed', 'notification', 'reconcile']);
  });

  it('reads next to nothing for a post nothing is known of', async () => {
    expect(await timelines.page('default', { type: 'post', id: 'eeeeeeeeeeeeeeeeeeeeee02' }, null, 100, KEPT_SINCE)).toEqual([]);
    const { rows, pages } = await explained();
    expect(rows).toEqual(Object.fromEntries(TABLES.map((table) => [table, 0])));
    expect(pages).toBeLessThanOrEqual(100);
  });
});
