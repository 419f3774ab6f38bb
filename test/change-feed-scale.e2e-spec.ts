import { Client } from 'pg';
import { withIndexesDeferred } from './support/bulk-load';
import { RunningService, waitFor } from './support/service';
import { ServiceSpec, startSpec } from './support/spec';

const ENTRIES = 1_000_000;
/** Committed after the load, not placed yet: the sequencer places them after the million. */
const UNPLACED = 50;
/** One entry a second up to the load: the oldest are 11.6 days old, so the default 7 days' retention prunes some. */
const RETAINED_FROM = ENTRIES - 7 * 24 * 3600 + 1;
/** The only entry of the profile `prof_rare`. */
const RARE_AT = 999_999;
const ADMIN_TOKEN = 'admin-token-feed-scale';
const CALLS = 15;

interface Item {
  cursor: string;
  type: string;
  id: string;
  sequence: number;
  post?: { _id: string; n: number };
  account?: { _id: string; n: number };
}
interface Page {
  data: Item[];
  nextCursor: string;
}

/** What the load wrote at `position` (the SQL below and this agree). */
const typeAt = (i: number) => (i % 10 === 0 ? 'account.changed' : i % 97 === 0 ? 'post.deleted' : 'post.changed');

describe('GET /changes with a million entries', () => {
  let spec: ServiceSpec;
  let service: RunningService;
  const timings: string[] = [];
  const get = (path: string) => fetch(`${service.baseUrl}${path}`);

  /** `path`'s answer, after timing CALLS calls of it (one to warm up first); timings are reported, never asserted. */
  async function timed(path: string): Promise<{ status: number; body: Page }> {
    await (await get(path)).arrayBuffer();
    const times: number[] = [];
    let answer: { status: number; body: Page } | undefined;
    for (let i = 0; i < CALLS; i++) {
      const started = performance.now();
      const response = await get(path);
      answer = { status: response.status, body: (await response.json()) as Page };
      times.push(performance.now() - started);
    }
    times.sort((a, b) => a - b);
    timings.push(`  ${path.padEnd(58)} p50 ${times[CALLS >> 1].toFixed(1).padStart(6)} ms   max ${times[CALLS - 1].toFixed(1).padStart(6)} ms`);
    return answer!;
  }

  /** Each entry of `page` at the positions the load gave it, in order. */
  function expectLoaded(page: Page, positions: number[]): void {
    expect(page.data.map((item) => Number(item.cursor))).toEqual(positions);
    for (const item of page.data) {
      const i = Number(item.cursor);
      expect(item.type).toBe(typeAt(i));
      expect(item[item.type.startsWith('post.') ? 'post' : 'account']).toEqual({ _id: `r${i % 100_000}`, n: i });
    }
  }
  const range = (from: number, count: number, step = 1) => Array.from({ length: count }, (_, k) => from + k * step);

  beforeAll(async () => {
    // No Pozy: an api replica runs no jobs; its sequencer places entries like every replica's.
    spec = await startSpec('feed_scale', { env: { ROLE: 'api', ADMIN_TOKEN } });
    service = spec.service;
    const client = new Client({ connectionString: spec.db.url });
    await client.connect();
    try {
      await withIndexesDeferred(client, ['change'], async () => {
        await client.query(
          `INSERT INTO change (workspace_id, position, type, resource_id, sequence, changed_at, profile_ids, platforms, data)
           SELECT 'default', i, CASE WHEN i % 10 = 0 THEN 'account.changed' WHEN i % 97 = 0 THEN 'post.deleted' ELSE 'post.changed' END,
                  'r' || (i % 100000), 1 + i / 100000, now() - (${ENTRIES} - i) * interval '1 second',
                  ARRAY[CASE WHEN i = ${RARE_AT} THEN 'prof_rare' ELSE 'prof_' || (i % 500) END],
                  CASE WHEN i % 3 = 0 THEN ARRAY['x'] ELSE ARRAY['linkedin', 'threads'] END,
                  jsonb_build_object('_id', 'r' || (i % 100000), 'n', i)
             FROM generate_series(1, ${ENTRIES}) i`,
        );
      });
      // As a writer's statement leaves them: no position yet.
      await client.query(
        `INSERT INTO change (workspace_id, type, resource_id, sequence, profile_ids, platforms, data)
         SELECT 'default', 'post.changed', 'late' || i, 1, ARRAY['prof_1'], ARRAY['x'], jsonb_build_object('_id', 'late' || i, 'n', i)
           FROM generate_series(1, ${UNPLACED}) i`,
      );
      await client.query('ANALYZE change');
    } finally {
      await client.end();
    }
  }, 300_000);

  afterAll(async () => {
    if (timings.length > 0)
      process.stdout.write(
        `GET /changes with ${ENTRIES.toLocaleString('en')} entries (${CALLS} calls each, after one to warm up)\n${timings.join('\n')}\n`,
      );
    await spec?.close();
  });

  it('places entries committed after the million at the next positions, in insertion order', async () => {
    const head = await waitFor('the late entries placed', async () => {
      const { cursor } = (await (await get('/changes/head')).json()) as { cursor: string };
      return cursor === String(ENTRIES + UNPLACED) ? cursor : undefined;
    });
    expect(head).toBe(String(ENTRIES + UNPLACED));

    const { status, body } = await timed(`/changes?after=${ENTRIES}&limit=1000`);
    expect(status).toBe(200);
    expect(body.data.map((item) => [item.cursor, item.id])).toEqual(range(1, UNPLACED).map((k) => [String(ENTRIES + k), `late${k}`]));
    expect(body.nextCursor).toBe(String(ENTRIES + UNPLACED));
  });

  it('pages through the start, the middle and the end in position order', async () => {
    for (const after of [0, 500_000, ENTRIES - 1_000]) {
      const { status, body } = await timed(`/changes?after=${after}&limit=1000`);
      expect(status).toBe(200);
      expectLoaded(body, range(after + 1, 1_000));
      expect(body.nextCursor).toBe(String(after + 1_000));
    }
    const { body } = await timed('/changes');
    expectLoaded(body, range(1, 100));
  });

  it('filters by type, profile and platform, and moves a rare filter on without scanning the feed', async () => {
    // A filtered read looks at most 10,000 positions ahead: fewer than a page of deletions there, then a cursor past them.
    const deleted = await timed('/changes?after=0&limit=100&types=post.deleted');
    expectLoaded(
      deleted.body,
      range(1, 10_000).filter((i) => typeAt(i) === 'post.deleted'),
    );
    expect(deleted.body.nextCursor).toBe('10000');

    const profile = await timed('/changes?after=0&limit=100&profileId=prof_7');
    expectLoaded(profile.body, range(7, 20, 500));

    const both = await timed('/changes?after=400000&limit=100&types=account.changed&platform=x');
    expectLoaded(
      both.body,
      range(400_001, 10_000)
        .filter((i) => typeAt(i) === 'account.changed' && i % 3 === 0)
        .slice(0, 100),
    );

    // A filter that matches nothing in the next 10,000 positions answers nothing, and a cursor past them.
    const rare = await timed('/changes?after=0&limit=100&profileId=prof_rare');
    expect(rare.body).toEqual({ data: [], nextCursor: '10000' });
    const found = await timed(`/changes?after=${RARE_AT - 5_000}&limit=100&profileId=prof_rare`);
    expectLoaded(found.body, [RARE_AT]);
  });

  it('answers the head at once, and a long poll at the head with nothing new', async () => {
    const started = Date.now();
    const response = await get(`/changes?after=${ENTRIES + UNPLACED}&wait=1`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ data: [], nextCursor: String(ENTRIES + UNPLACED) });
    // It waited for a change rather than answering at once.
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    await timed('/changes/head');
  });

  it('prunes what retention no longer keeps in batches, and refuses the cursors it took with the oldest one left', async () => {
    const started = performance.now();
    const pruned = await fetch(`${service.baseUrl}/admin/retention`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    const ms = performance.now() - started;
    expect(pruned.status).toBe(200);
    const {
      deleted: { changes },
      changeCutoff,
    } = (await pruned.json()) as { deleted: { changes: number }; changeCutoff: string };
    timings.push(`  POST /admin/retention (${changes.toLocaleString('en')} entries pruned)`.padEnd(62) + `   once ${ms.toFixed(0).padStart(6)} ms`);
    // At least those older than 7 days at the load; a few more have aged past it since.
    expect(changes).toBeGreaterThanOrEqual(RETAINED_FROM - 1);
    expect(changes).toBeLessThan(RETAINED_FROM + 600);
    // Exactly what is older than the cutoff went: what is left is one unbroken run from the first entry kept.
    const { rows } = await service.pool.query<{ oldest: string; older: number; kept: number }>(
      `SELECT min(position)::text AS oldest, count(*) FILTER (WHERE changed_at < $1)::int AS older, count(*)::int AS kept FROM change`,
      [changeCutoff],
    );
    expect(rows[0]).toEqual({ oldest: String(changes + 1), older: 0, kept: ENTRIES + UNPLACED - changes });

    const expired = await get('/changes?after=1');
    expect(expired.status).toBe(410);
    expect(await expired.json()).toMatchObject({ statusCode: 410, error: 'cursor_expired', details: { oldestCursor: String(changes) } });

    const { body } = await timed('/changes?limit=1000');
    expectLoaded(body, range(changes + 1, 1_000));
  }, 120_000);
});
