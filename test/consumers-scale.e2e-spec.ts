import { Client, Pool } from 'pg';
import { ChangeRepository } from '../src/changes/change.repository';
import { ConsumerRepository } from '../src/changes/consumer.repository';
import { partitionOf } from '../src/changes/partition';
import { withIndexesDeferred } from './support/bulk-load';
import { createTestDatabase, TestDatabase } from './support/database';
import { explainAnalyzed, planNodes, recordingDatabase, rowsVisitedIn } from './support/explain';
import { parseMetrics } from './support/metrics';
import { RunningService, startService, waitFor } from './support/service';

const ENTRIES = 1_000_000;
const CONSUMERS = 1_000;
/** Every tenth consumer is read in three partitions. */
const PARTITIONED_EVERY = 10;
/** Consumer n's partitions are committed at FIRST_CURSOR + n × STEP (+ the partition): from 300,000 up to the head. */
const FIRST_CURSOR = 300_000;
const STEP = 700;
const ADMIN_TOKEN = 'admin-token-consumers-scale';
const ADMIN = { authorization: `Bearer ${ADMIN_TOKEN}` };
const CALLS = 5;
const DAY_S = 86_400;

const name = (n: number) => `c${String(n).padStart(4, '0')}`;
const cursorOf = (n: number, partition = 0) => FIRST_CURSOR + n * STEP + partition;

/**
 * Named consumers with a million feed entries and 1,000 consumers: listing them with their lag, /metrics, a
 * partitioned read and retention's hold stay index lookups, never a count over the feed. Entry i changed
 * ENTRIES − i seconds before the load, so the oldest are 11.6 days old.
 */
describe('named consumers with a million entries and 1,000 consumers', () => {
  let db: TestDatabase;
  let service: RunningService;
  let pool: Pool;
  const timings: string[] = [];

  async function timed(path: string, init: RequestInit = { headers: ADMIN }): Promise<{ status: number; text: string }> {
    await (await fetch(`${service.baseUrl}${path}`, init)).arrayBuffer();
    const times: number[] = [];
    let answer: { status: number; text: string } | undefined;
    for (let i = 0; i < CALLS; i++) {
      const started = performance.now();
      const response = await fetch(`${service.baseUrl}${path}`, init);
      answer = { status: response.status, text: await response.text() };
      times.push(performance.now() - started);
    }
    times.sort((a, b) => a - b);
    timings.push(`  ${path.padEnd(58)} p50 ${times[CALLS >> 1].toFixed(1).padStart(6)} ms   max ${times[CALLS - 1].toFixed(1).padStart(6)} ms`);
    return answer!;
  }

  beforeAll(async () => {
    db = await createTestDatabase('consumers_scale');
    // Retention's own window is a day: without the consumers it would prune nearly everything.
    service = await startService(db.url, { ROLE: 'api', ADMIN_TOKEN, CHANGE_RETENTION_DAYS: '1', RETENTION_CRON: 'off' });
    const client = new Client({ connectionString: db.url });
    await client.connect();
    try {
      await withIndexesDeferred(client, ['change'], async () => {
        await client.query(
          `INSERT INTO change (workspace_id, position, type, resource_id, sequence, changed_at, profile_ids, platforms, data)
           SELECT 'default', i, CASE WHEN i % 10 = 0 THEN 'account.changed' ELSE 'post.changed' END,
                  'r' || (i % 100000), 1 + i / 100000, now() - (${ENTRIES} - i) * interval '1 second',
                  ARRAY['prof_' || (i % 500)], ARRAY['linkedin'], jsonb_build_object('_id', 'r' || (i % 100000), 'n', i)
             FROM generate_series(1, ${ENTRIES}) i`,
        );
      });
      await client.query(
        `INSERT INTO consumer (name, types, workspaces, profile_ids, platforms, partitions)
         SELECT 'c' || lpad(n::text, 4, '0'), '{}', '{}', '{}', '{}', CASE WHEN n % ${PARTITIONED_EVERY} = 0 THEN 3 ELSE 1 END
           FROM generate_series(0, ${CONSUMERS - 1}) n`,
      );
      await client.query(
        `INSERT INTO consumer_partition (consumer_name, partition, cursor)
         SELECT c.name, p, ${FIRST_CURSOR} + substr(c.name, 2)::int * ${STEP} + p FROM consumer c, generate_series(0, c.partitions - 1) p`,
      );
      await client.query('ANALYZE change; ANALYZE consumer; ANALYZE consumer_partition');
    } finally {
      await client.end();
    }
    pool = new Pool({ connectionString: db.url, max: 2 });
  }, 600_000);

  afterAll(async () => {
    if (timings.length > 0)
      process.stdout.write(
        `Named consumers, ${ENTRIES.toLocaleString('en')} entries, ${CONSUMERS} consumers (${CALLS} calls each)\n${timings.join('\n')}\n`,
      );
    await pool?.end();
    await service?.close();
    await db?.drop();
  });

  it('lists every consumer a page at a time with its lag, exact for entries and age', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const { status, text } = await timed(`/admin/consumers?limit=100${cursor ? `&cursor=${cursor}` : ''}`);
      expect(status).toBe(200);
      const page = JSON.parse(text) as {
        data: { name: string; head: string; positions: { cursor: string; lag: { entries: number; seconds: number } }[] }[];
        nextCursor: string | null;
      };
      for (const consumer of page.data) {
        const n = Number(consumer.name.slice(1));
        seen.push(consumer.name);
        expect(consumer.head).toBe(String(ENTRIES));
        for (const [partition, position] of consumer.positions.entries()) {
          expect(position.cursor).toBe(String(cursorOf(n, partition)));
          expect(position.lag.entries).toBe(ENTRIES - cursorOf(n, partition));
          // The oldest entry not committed, cursor + 1, changed ENTRIES − (cursor + 1) seconds before the load.
          const age = ENTRIES - (cursorOf(n, partition) + 1);
          expect(position.lag.seconds).toBeGreaterThanOrEqual(age);
          expect(position.lag.seconds).toBeLessThan(age + 600);
        }
      }
      cursor = page.nextCursor;
    } while (cursor !== null);
    expect(seen).toEqual(Array.from({ length: CONSUMERS }, (_, n) => name(n)));
    const one = await timed(`/admin/consumers/${name(500)}`);
    expect(JSON.parse(one.text)).toMatchObject({ name: name(500), partitions: 3, lag: { entries: ENTRIES - cursorOf(500) } });
  }, 120_000);

  it('reads the lag and the positions by index: a lookup per position, never a scan of the feed', async () => {
    const recording = recordingDatabase(pool);
    const changes = new ChangeRepository(recording.database);
    const consumers = new ConsumerRepository(recording.database);
    const asked = Array.from({ length: 300 }, (_, n) => String(cursorOf(n) + 1));
    expect((await changes.changedAt(asked)).size).toBe(300);
    await changes.bounds(recording.database.db);
    expect((await consumers.positions()).length).toBe(CONSUMERS);
    expect((await consumers.activePartitions()).length).toBe(CONSUMERS + 2 * (CONSUMERS / PARTITIONED_EVERY));
    const [lookup, bounds] = recording.sent();
    const plans = [(await explainAnalyzed(pool, lookup)).plan, (await explainAnalyzed(pool, bounds)).plan];
    expect(rowsVisitedIn(plans[0], 'change')).toBeLessThanOrEqual(300);
    for (const plan of plans)
      expect(planNodes(plan).filter((node) => node['Relation Name'] === 'change' && node['Node Type'] === 'Seq Scan')).toEqual([]);
  });

  it('exports the 20 most lagging consumers on /metrics, and the count by status', async () => {
    const { status, text } = await timed('/metrics', {});
    expect(status).toBe(200);
    const m = parseMetrics(text);
    const lagging = [...m.keys()].filter((key) => key.startsWith('pozy_sync_consumer_lag_entries{'));
    expect(lagging.sort()).toEqual(Array.from({ length: 20 }, (_, n) => `pozy_sync_consumer_lag_entries{consumer="${name(n)}"}`).sort());
    expect(m.get(`pozy_sync_consumer_lag_entries{consumer="${name(0)}"}`)).toBe(ENTRIES - FIRST_CURSOR);
    expect(m.get(`pozy_sync_consumer_lag_seconds{consumer="${name(0)}"}`)).toBeGreaterThanOrEqual(ENTRIES - FIRST_CURSOR - 1);
    expect(m.get('pozy_sync_consumers{status="active"}')).toBe(CONSUMERS);
  });

  it('reads a partition from the middle of the feed: only its resources, a page at once', async () => {
    const n = 500;
    for (const partition of [0, 1, 2]) {
      const { status, text } = await timed(`/changes?consumer=${name(n)}&partition=${partition}&limit=100`, { headers: ADMIN });
      expect(status).toBe(200);
      const page = JSON.parse(text) as { data: { cursor: string; type: string; id: string }[]; nextCursor: string; partition: number };
      expect(page.partition).toBe(partition);
      // Its own among limit × partitions positions: about a page, a full one ending at its last entry.
      expect(page.data.length).toBeGreaterThan(50);
      expect(page.data.length).toBeLessThanOrEqual(100);
      expect(Number(page.data[0].cursor)).toBeGreaterThan(cursorOf(n, partition));
      for (const item of page.data) expect(partitionOf(item.type.startsWith('post.') ? 'post' : 'account', item.id, 3)).toBe(partition);
      expect(page.nextCursor).toBe(page.data.length === 100 ? page.data[99].cursor : String(cursorOf(n, partition) + 300));
    }
  });

  it('retention keeps what the active consumers have not committed, and expires those over CONSUMER_MAX_LAG_DAYS (7) behind', async () => {
    const started = performance.now();
    const response = await fetch(`${service.baseUrl}/admin/retention`, { method: 'POST', headers: ADMIN });
    const ms = performance.now() - started;
    timings.push(`  ${'POST /admin/retention (expiry, hold, prune)'.padEnd(58)} ${ms.toFixed(0).padStart(6)} ms`);
    expect(response.status).toBe(200);
    // Consumers whose next entry changed over 7 days before the load are expired: cursor + 1 < ENTRIES − 7 days.
    const limit = ENTRIES - 7 * DAY_S;
    const expiredCount = Array.from({ length: CONSUMERS }, (_, n) => n).filter((n) => cursorOf(n) + 1 < limit - 600).length;
    const lowestActive = Array.from({ length: CONSUMERS }, (_, n) => cursorOf(n)).find((cursor) => cursor + 1 > limit + 600)!;
    const counts = await waitFor('the figures', async () => {
      const m = parseMetrics(await (await fetch(`${service.baseUrl}/metrics`)).text());
      return m.get('pozy_sync_consumers{status="expired"}') !== undefined ? m : undefined;
    });
    expect(counts.get('pozy_sync_consumers{status="expired"}')).toBeGreaterThanOrEqual(expiredCount);
    expect(counts.get('pozy_sync_consumers{status="expired"}')).toBeLessThanOrEqual(expiredCount + 2);
    // What is left starts right after the lowest active position (a day's window alone would have kept 86,400).
    const { rows } = await pool.query<{ oldest: string }>('SELECT min(position)::text AS oldest FROM change');
    expect(Number(rows[0].oldest)).toBeLessThanOrEqual(lowestActive + 1);
    expect(Number(rows[0].oldest)).toBeGreaterThan(limit - 2 * STEP);
  }, 300_000);
});
