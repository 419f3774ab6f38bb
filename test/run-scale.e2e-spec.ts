import { randomUUID } from 'node:crypto';
import type { Pool } from 'pg';
import { ChangeRepository } from '../src/changes/change.repository';
import { SweepRunRepository } from '../src/runs/sweep-run.repository';
import { createTestDatabase, TestDatabase } from './support/database';
import { explainAnalyzed, planNodes, recordingDatabase, rowsReadFrom, SentStatement } from './support/explain';
import { startService } from './support/service';
import { DEFAULT_WORKSPACE } from '../src/common/workspace-id';

/**
 * The two statements an import runs on every page that read tables growing with the run: which listed posts the run
 * has already seen (`sweep_seen`), and the change feed's sequencer (`change`). Each must cost a page what the page
 * holds, not what the run has done so far; otherwise an import's time grows with the square of the workspace. Both
 * are shown far into a run (200,000 rows loaded with SQL), in the conditions that made PostgreSQL plan them badly.
 * What is asserted is work (rows and pages read, from EXPLAIN ANALYZE of what the repositories sent), never time.
 */
describe('the per-page statements of an import, 200,000 rows into a run', () => {
  const SEEN = 200_000;
  let db: TestDatabase;
  let pool: Pool;
  let sent: () => SentStatement[];
  let runs: SweepRunRepository;
  let changes: ChangeRepository;

  beforeAll(async () => {
    db = await createTestDatabase('run_scale');
    // The service's own migrations make the schema.
    await (await startService(db.url, { ROLE: 'api' })).close();
    pool = db.pool(2);
    // No autovacuum here: an automatic ANALYZE of a table the tests filled holds a snapshot while it samples, and
    // while any snapshot of this database may still see the feed's placed entries, no scan may mark them dead.
    for (const table of ['sweep_seen', 'post', 'change']) await pool.query(`ALTER TABLE ${table} SET (autovacuum_enabled = false)`);
    const recording = recordingDatabase(pool);
    sent = recording.sent;
    runs = new SweepRunRepository(recording.database);
    changes = new ChangeRepository(recording.database);
  }, 120_000);

  afterAll(async () => {
    await pool?.end();
    await db?.drop();
  });

  /**
   * Until no other session of this database holds a snapshot (an autovacuum worker, a statement in flight): only then
   * are the entries placed before dead to everyone, so that the pass that meets them marks them in the index.
   */
  async function noOlderSnapshots(): Promise<void> {
    for (const deadline = Date.now() + 60_000; ;) {
      const { rows } = await pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND pid <> pg_backend_pid() AND (backend_xmin IS NOT NULL OR backend_xid IS NOT NULL)`,
      );
      if (rows[0].n === 0) return;
      if (Date.now() > deadline) throw new Error(`${rows[0].n} other sessions of this database kept a snapshot for a minute`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /** The one statement the last call sent that matches `pattern`. */
  function statement(pattern: RegExp): SentStatement {
    const matching = sent().filter(({ statement }) => pattern.test(statement.sql));
    expect(matching).toHaveLength(1);
    return matching[0];
  }

  it("looks up a page's posts in what the run has seen with one probe each, however much it has seen", async () => {
    const load = (run: string) =>
      pool.query(
        `INSERT INTO sweep_seen (workspace_id, run_id, resource, id) SELECT 'default', $1, 'post', 'p' || i FROM generate_series(1, ${SEEN}) i`,
        [run],
      );
    // A page of 500: the first half seen already, the rest new.
    const page = Array.from({ length: 500 }, (_, i) => `p${SEEN - 250 + i + 1}`);
    // The import's lookup (with the mirror's versions, one probe of post per id too) and the accounts' (seen alone).
    const lookUp = async (run: string) => {
      const { seen, mirrored } = await runs.seenAndMirrored(DEFAULT_WORKSPACE, run, 'post', page);
      expect([...seen].sort()).toEqual(page.slice(0, 250).sort());
      expect(mirrored.size).toBe(0);
      const { plan } = await explainAnalyzed(pool, statement(/"sweep_seen"/i));
      expect(rowsReadFrom(plan, 'post')).toBeLessThanOrEqual(page.length);
      const alone = await runs.seen(DEFAULT_WORKSPACE, run, 'post', page);
      expect([...alone].sort()).toEqual(page.slice(0, 250).sort());
      const { plan: alonePlan } = await explainAnalyzed(pool, statement(/"sweep_seen"/i));
      return Math.max(rowsReadFrom(plan, 'sweep_seen'), rowsReadFrom(alonePlan, 'sweep_seen'));
    };

    // States of the statistics in which PostgreSQL takes the running run for one with nothing seen, and may read
    // every id it has seen (to filter them, or to hash them): analyzed while empty (autovacuum, early in the run)...
    await pool.query('ANALYZE sweep_seen');
    const first = randomUUID();
    await load(first);
    expect(await lookUp(first)).toBeLessThanOrEqual(page.length);

    // ...and analyzed while the run was another.
    await pool.query('ANALYZE sweep_seen');
    const second = randomUUID();
    await load(second);
    expect(await lookUp(second)).toBeLessThanOrEqual(page.length);
  });

  it('walks the mirror for posts the run did not see with one probe of what it has seen per post, however much it has seen', async () => {
    const WALKED = 5_000;
    const run = randomUUID();
    await pool.query(
      `INSERT INTO post (workspace_id, id, status, platforms, account_ids, platform_names, pozy_created_at, pozy_updated_at,
                         synced_at, read_started_at, read_id, sequence)
       SELECT 'default', 'w' || lpad(i::text, 7, '0'), 'published', '[]', '{}', '{}', now(), now(), now(), now() - interval '1 hour',
              gen_random_uuid(), 1
         FROM generate_series(1, ${WALKED}) i`,
    );
    // Every post seen but the last ten: what the walk must find, and nothing else.
    await pool.query(
      `INSERT INTO sweep_seen (workspace_id, run_id, resource, id)
       SELECT 'default', $1, 'post', 'w' || lpad(i::text, 7, '0') FROM generate_series(1, ${WALKED - 10}) i`,
      [run],
    );
    const chunk = await runs.missingPosts(DEFAULT_WORKSPACE, run, 1, null, new Date());
    expect(chunk.missing).toEqual(Array.from({ length: 10 }, (_, i) => `w${String(WALKED - 9 + i).padStart(7, '0')}`));
    const { plan } = await explainAnalyzed(pool, statement(/"sweep_seen"/i));
    // One probe per post walked, each reading at most its own row: not every id the run has seen, for each post.
    expect(rowsReadFrom(plan, 'sweep_seen')).toBeLessThanOrEqual(WALKED);
    const probes = planNodes(plan).filter((node) => node['Relation Name'] === 'sweep_seen');
    expect(probes.length).toBeGreaterThan(0);
    for (const probe of probes) expect(probe['Index Cond']).toMatch(/\bid = /);
  });

  it('places new feed entries without reading the entries it placed before, however many', async () => {
    // An import's worth of entries, all placed (their old versions, position NULL, stay in the indexes until
    // vacuum, which is kept off here as it is during a long import), then one page more.
    const insert = (from: number, to: number) =>
      pool.query(
        `INSERT INTO change (workspace_id, type, resource_id, sequence, profile_ids, platforms, data)
         SELECT 'default', 'post.changed', 'post' || i, 1, ARRAY['prof'], ARRAY['x'], jsonb_build_object('id', 'post' || i, 'content', repeat('x', 200))
           FROM generate_series(${from}, ${to}) i`,
      );
    await insert(1, SEEN);
    let placed = 0;
    for (let n = (await changes.place(5_000)).placed; n > 0; n = (await changes.place(5_000)).placed) placed += n;
    expect(placed).toBe(SEEN);
    await insert(SEEN + 1, SEEN + 500);
    await noOlderSnapshots();
    sent();
    // The pass that meets the dead entries first may read them; it leaves them marked for the next ones.
    expect((await changes.place(5_000)).placed).toBe(500);
    const pass = statement(/^with "next"/i);
    await insert(SEEN + 501, SEEN + 1_000);

    // The next pass, as the sequencer sends it, explained (and rolled back), then run.
    const { plan } = await explainAnalyzed(pool, pass);
    expect((await changes.place(5_000)).placed).toBe(500);

    // Pages the scans of the table read (the update's own writes of the 500 new versions aside).
    const pages = planNodes(plan)
      .filter((node) => node['Relation Name'] === 'change' && node['Node Type'] !== 'ModifyTable')
      .reduce((sum, node) => sum + (node['Shared Hit Blocks'] ?? 0) + (node['Shared Read Blocks'] ?? 0), 0);
    // A pass reads about what it places: a few pages per entry, nothing like the 200,000 entries placed before.
    expect(rowsReadFrom(plan, 'change')).toBeGreaterThanOrEqual(500);
    expect(pages).toBeLessThan(10 * 500);
    const { rows } = await pool.query<{ max: string; unplaced: string }>(
      'SELECT max(position)::text AS max, count(*) FILTER (WHERE position IS NULL)::text AS unplaced FROM change',
    );
    expect(rows[0]).toEqual({ max: String(SEEN + 1_000), unplaced: '0' });
  }, 120_000);
});
