import type { Pool } from 'pg';
import { PostsQuery } from '../src/mirror/posts/posts.query';
import { explainAnalyzed, planNodes, recordingDatabase } from './support/explain';
import { importEnded } from './support/runs';
import { SimulatorSpec, startSpec } from './support/spec';

const POSTS = 6_000;
/** The tables an import fills. */
const FILLED = ['account', 'change', 'post', 'resource_version', 'sweep_seen'];

interface TableStats {
  relname: string;
  analyzed_by_us: boolean;
  reltuples: number;
  rows: number;
}

describe('statistics from the first minute: the tables an import fills are analyzed by its end', () => {
  let harness: SimulatorSpec;
  let pool: Pool;

  beforeAll(async () => {
    harness = await startSpec('import_statistics', {
      env: { INITIAL_IMPORT: 'auto' },
      simulator: {
        deliver: false,
        before: (sim) => sim.world.seedExisting({ posts: POSTS, accounts: 120 }),
      },
    });
    pool = harness.db.pool(2);
  }, 120_000);

  afterAll(async () => {
    await pool?.end();
    await harness?.close();
  });

  it('leaves post, account, change, resource_version and sweep_seen analyzed, and the plain first page of GET /posts planned on an index', async () => {
    const run = await importEnded(pool, 240_000, 'the import to end', 200);
    expect(run).toMatchObject({ status: 'succeeded', error: null });
    expect(run.posts_created).toBeGreaterThan(POSTS * 0.9);

    // The endpoint's own statement for GET /posts?limit=50, explained on the imported mirror as it stands.
    const recording = recordingDatabase(pool);
    const page = await new PostsQuery(recording.database).list({ limit: 50 });
    expect(page.data).toHaveLength(50);
    const statements = recording.sent().filter(({ statement }) => /from "post"/i.test(statement.sql));
    expect(statements.length).toBeGreaterThan(0);
    for (const statement of statements) {
      const nodes = planNodes((await explainAnalyzed(pool, statement)).plan);
      expect(nodes.filter((node) => node['Node Type'] === 'Seq Scan' && node['Relation Name'] === 'post')).toEqual([]);
      expect(nodes.some((node) => node['Relation Name'] === 'post' && node['Index Name'] !== undefined)).toBe(true);
    }

    const tables: TableStats[] = [];
    for (const table of FILLED) {
      const { rows } = await pool.query<TableStats>(
        `SELECT s.relname, s.last_analyze IS NOT NULL AS analyzed_by_us, c.reltuples::float8 AS reltuples,
                (SELECT count(*)::int FROM ${table}) AS rows
           FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
          WHERE s.schemaname = current_schema() AND s.relname = $1`,
        [table],
      );
      tables.push(rows[0]);
    }
    // ANALYZE run by the service (last_analyze; autovacuum's would be last_autoanalyze), and the planner's row count
    // close to the table's.
    for (const t of tables) {
      expect({ table: t.relname, analyzed: t.analyzed_by_us, near: t.reltuples >= 0.8 * t.rows }).toEqual({
        table: t.relname,
        analyzed: true,
        near: true,
      });
    }
  }, 300_000);

  it('keeps statistics of the columns the queries filter on, and none of the wide ones no query reads for its plan', async () => {
    // Runs after the import above: its end analyzed every table it filled.
    const { rows } = await pool.query<{ column: string }>(
      `SELECT tablename || '.' || attname AS column FROM pg_stats
        WHERE schemaname = current_schema() AND tablename = ANY($1::text[])
        ORDER BY 1`,
      [['post', 'change', 'resource_version']],
    );
    const columns = rows.map((row) => row.column);
    expect(columns).toEqual(
      expect.arrayContaining(['post.id', 'post.status', 'post.search', 'post.platform_names', 'post.account_ids', 'post.tags', 'change.platforms']),
    );
    const wide = [
      'post.answer',
      'post.extra',
      'post.platforms',
      'post.content',
      'change.data',
      'resource_version.data',
      'resource_version.event_ids',
    ];
    expect(columns.filter((column) => wide.includes(column))).toEqual([]);
  });
});
