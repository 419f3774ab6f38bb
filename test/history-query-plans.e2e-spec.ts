import { Client, Pool } from 'pg';
import { AppConfig } from '../src/config/app-config';
import type { Db } from '../src/database/database.service';
import { queryPoolOptions } from '../src/database/query-pool';
import { HistoryRepository } from '../src/mirror/history/history.repository';
import { HistoryService } from '../src/mirror/history/history.service';
import { withIndexesDeferred } from './support/bulk-load';
import { createTestDatabase, TestDatabase } from './support/database';
import { explainAnalyzed, planNodes, recordingDatabase, rowsVisitedIn, SentStatement } from './support/explain';
import { startService } from './support/service';

const VERSIONS = 1_000_000;
/** One post with a long history: the first HOT versions are its; the rest five versions each of 160,000 posts. */
const HOT = 200_000;

/**
 * A million versions of whole posts as the mirror writes them (about 1.1 kB of JSON each, a post with a target, media,
 * tags and the mirror's fields), one post holding a fifth of them: the history page, a page deep in it and asOf stay
 * index lookups reading about a page of rows, however many versions the table or the post holds. Also measures what
 * a version costs on disk (table, TOAST and indexes), which docs/consuming.md and docs/configuration.md quote per million changes.
 */
const LOAD = `
  INSERT INTO resource_version (workspace_id, resource_type, resource_id, sequence, read_at, read_id, event_ids, data)
  SELECT 'default', 'post', v.id, v.sequence, timestamptz '2026-01-01' + i * interval '1 second', gen_random_uuid(),
         jsonb_build_array('evt_' || md5(i::text)),
         jsonb_build_object('id', v.id, 'userId', '66a9ffee0011223344556600', 'title', 'Post title number ' || i,
           'content', 'Some content of a post about things, with a link https://example.com/' || i || ' and #hashtag words in it, long enough to be typical of a social post.',
           'status', 'scheduled', 'scheduledFor', '2026-12-04T10:00:00.000Z', 'timezone', 'Europe/Paris', 'publishedAt', null,
           'platforms', jsonb_build_array(jsonb_build_object('platform', 'instagram', 'accountId', '66a9ffee00112233445566bb', 'status', 'pending',
             'platformPostId', null, 'errorMessage', null, 'errorCategory', null, 'publishedAt', null)),
           'mediaItems', jsonb_build_array(jsonb_build_object('type', 'image', 'url', 'https://cdn.example.com/media/' || md5(i::text) || '.jpg')),
           'tags', jsonb_build_array('launch'), 'hashtags', jsonb_build_array('#hashtag'), 'mentions', '[]'::jsonb, 'visibility', 'public',
           'createdAt', '2026-01-01T00:00:00.000Z', 'updatedAt', to_char((timestamptz '2026-01-01' + i * interval '1 second') AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
           'workspaceId', 'default', 'profileIds', jsonb_build_array('66a9ffee00112233445566aa'), 'pozyCreatedAt', '2026-01-01T00:00:00.000Z',
           'pozyUpdatedAt', to_char((timestamptz '2026-01-01' + i * interval '1 second') AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
           'lastEventAt', null, 'syncedAt', to_char((timestamptz '2026-01-01' + i * interval '1 second') AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
           'deletedAt', null, 'sequence', v.sequence)
    FROM generate_series(1, ${VERSIONS}) AS i,
         LATERAL (SELECT CASE WHEN i <= ${HOT} THEN 'hot' ELSE lpad(to_hex(i / 5), 24, '0') END AS id,
                         CASE WHEN i <= ${HOT} THEN i ELSE i % 5 + 1 END AS sequence) AS v`;

/** The posts the history is of: a lookup of each by id finds its workspace. */
const POSTS = `
  INSERT INTO post (workspace_id, id, status, platforms, account_ids, platform_names, pozy_updated_at, synced_at, read_started_at, read_id, sequence)
  SELECT 'default', id, 'scheduled', '[]'::jsonb, '{}', '{}', now(), now(), now(), gen_random_uuid(), 5
    FROM (SELECT 'hot' AS id UNION ALL SELECT DISTINCT resource_id FROM resource_version WHERE resource_id <> 'hot') AS ids`;

describe('history at scale: a million versions, read by index', () => {
  let db: TestDatabase;
  let pool: Pool;
  let sent: () => SentStatement[];
  let history: HistoryService;
  let reads: Db;
  let repository: HistoryRepository;
  let bytes: { total: number; heap: number; toast: number; indexes: number };

  beforeAll(async () => {
    db = await createTestDatabase('history_plans');
    // The service's own migrations make the schema.
    await (await startService(db.url, { ROLE: 'api' })).close();
    const client = new Client({ connectionString: db.url });
    await client.connect();
    try {
      await withIndexesDeferred(client, ['resource_version'], async () => {
        await client.query(LOAD);
      });
      await client.query(POSTS);
      await client.query('VACUUM ANALYZE resource_version');
      await client.query('ANALYZE post');
      const { rows } = await client.query<{ total: string; heap: string; toast: string; indexes: string }>(
        `SELECT pg_total_relation_size('resource_version') AS total, pg_relation_size('resource_version') AS heap,
                pg_total_relation_size('resource_version') - pg_relation_size('resource_version') - pg_indexes_size('resource_version') AS toast,
                pg_indexes_size('resource_version') AS indexes`,
      );
      bytes = { total: Number(rows[0].total), heap: Number(rows[0].heap), toast: Number(rows[0].toast), indexes: Number(rows[0].indexes) };
    } finally {
      await client.end();
    }
    // Connected as the query endpoints' pools connect (their statement timeout, no parallel workers).
    pool = new Pool({
      connectionString: db.url,
      max: 2,
      ...queryPoolOptions(AppConfig.fromEnvironment({ DATABASE_URL: db.url, POZY_API_KEY: 'sk_test', LOG_LEVEL: 'error' })),
    });
    const recording = recordingDatabase(pool);
    sent = recording.sent;
    reads = recording.database.db;
    repository = new HistoryRepository(recording.database);
    history = new HistoryService(repository);
  }, 900_000);

  afterAll(async () => {
    await pool?.end();
    await db?.drop();
  });

  /** Each statement sent since the last call that reads resource_version, explained: no sequential scan, few rows. */
  async function explainVersionReads(mostRows: number): Promise<string[]> {
    const reads = sent().filter(({ statement }) => /"resource_version"/.test(statement.sql));
    expect(reads.length).toBeGreaterThan(0);
    const indexes: string[] = [];
    for (const statement of reads) {
      const { plan } = await explainAnalyzed(pool, statement);
      const nodes = planNodes(plan);
      expect(nodes.filter((node) => node['Node Type'] === 'Seq Scan')).toEqual([]);
      expect(rowsVisitedIn(plan, 'resource_version')).toBeLessThanOrEqual(mostRows);
      indexes.push(...nodes.map((node) => node['Index Name']).filter((name): name is string => name !== undefined));
    }
    return indexes;
  }

  it('costs about 1.5 kB a version of a 1.1 kB post, its indexes included', () => {
    const perVersion = bytes.total / VERSIONS;
    process.stdout.write(
      `resource_version: ${VERSIONS} versions, ${bytes.total} bytes (heap ${bytes.heap}, TOAST ${bytes.toast}, indexes ${bytes.indexes}): ` +
        `${perVersion.toFixed(0)} bytes a version\n`,
    );
    expect(perVersion).toBeLessThan(2_000);
  });

  it('answers the first page and a page deep in a 200,000-version history by primary key, reading a page of rows', async () => {
    const first = await history.page('post', 'hot', { limit: 50 }, reads, '*');
    expect(first.data.map((v) => v.sequence)).toEqual(Array.from({ length: 50 }, (_, i) => HOT - i));
    expect(await explainVersionReads(51)).toContain('resource_version_pkey');

    const second = await history.page('post', 'hot', { limit: 50, cursor: first.nextCursor! }, reads, '*');
    expect(second.data[0].sequence).toBe(HOT - 50);
    // Deep in: a page 150,000 versions back (a cursor as the service writes them).
    const cursor = Buffer.from(JSON.stringify({ workspace: 'default', before: 50_000 })).toString('base64url');
    const page = await history.page('post', 'hot', { limit: 50, cursor }, reads, '*');
    expect(page.data[0].sequence).toBe(49_999);
    expect(await explainVersionReads(51)).toContain('resource_version_pkey');
  });

  it('answers asOf in the middle of a long history and of a short one with one probe of the (…, read_at, sequence) index', async () => {
    const middle = new Date(Date.parse('2026-01-01T00:00:00Z') + 100_000.5 * 1_000);
    const at = await history.asOf('post', 'hot', middle, undefined, reads, '*');
    expect(JSON.parse(at!)).toMatchObject({ id: 'hot', sequence: 100_000 });
    expect(await explainVersionReads(1)).toContain('resource_version_workspace_id_resource_type_resource_id_rea_idx');

    const short = lpad(500_000 / 5);
    const some = await history.asOf('post', short, new Date('2027-01-01T00:00:00Z'), ['id', 'sequence'], reads, '*');
    expect(JSON.parse(some!)).toEqual({ id: short, sequence: 5 });
    expect(await explainVersionReads(1)).toContain('resource_version_workspace_id_resource_type_resource_id_rea_idx');
  });

  it("prunes superseded versions walking the read_at index, a batch's rows and their successors' probes at most", async () => {
    // Ten minutes of the first day: the hot post's versions 1 to 599 are superseded by versions read within it.
    const cutoff = new Date('2026-01-01T00:10:00Z');
    const deleted = await repository.pruneBefore(cutoff, 100);
    expect(deleted).toBeGreaterThanOrEqual(100);
    const indexes = await explainVersionReads(3 * 100);
    expect(indexes).toContain('resource_version_read_at_idx');
  });
});

const lpad = (n: number) => n.toString(16).padStart(24, '0');
