import { Client, Pool } from 'pg';
import { AppConfig } from '../src/config/app-config';
import { queryPoolOptions } from '../src/database/query-pool';
import type { ListPostsQuery } from '../src/mirror/posts/dto/list-posts.query';
import { PostsQuery } from '../src/mirror/posts/posts.query';
import { withIndexesDeferred } from './support/bulk-load';
import { createTestDatabase, TestDatabase } from './support/database';
import { explainAnalyzed, pagesTouched, planNodes, recordingDatabase, rowsVisitedIn, SentStatement } from './support/explain';
import { startService } from './support/service';
import { drawShapes, PostShape, ShapeVocabulary } from '../bench/post-shapes';

const POSTS = 500_000;

/**
 * 500,000 whole posts, in the proportions of a real workspace: a fifth drafts (no scheduledFor), two fifths published,
 * a tenth with a failed target, media on half, tags from a small vocabulary (each on an eighth of the posts) and one
 * rare tag, titles in several languages, a rare word in a few contents.
 */
const LOAD = `
  INSERT INTO post (workspace_id, id, status, title, content, scheduled_for, published_at, platforms, tags, hashtags, visibility, extra,
                    account_ids, platform_names, error_categories, has_media, pozy_created_at, pozy_updated_at,
                    synced_at, read_started_at, read_id, sequence)
  SELECT 'default', lpad(to_hex(i), 24, '0'),
         (ARRAY['draft','scheduled','published','partial','failed'])[1 + i % 5],
         CASE WHEN i % 10 < 8 THEN 'Title ' || i || ' ' || (ARRAY['spring','summer','autumn','winter','frühling','распродажа'])[1 + i % 6] END,
         'Content of post ' || i || ' about ' || (ARRAY['coffee','tea','shoes','books','travel','music','garden'])[1 + (i * 7) % 7]
           || CASE WHEN i % 10000 = 0 THEN ' zebra' ELSE '' END,
         CASE WHEN i % 5 = 0 THEN NULL ELSE timestamptz '2026-01-01' + (i % 200000) * interval '1 minute' END,
         CASE WHEN i % 5 IN (2, 3) THEN timestamptz '2026-01-01' + (i % 200000) * interval '1 minute' + interval '5 seconds' END,
         jsonb_build_array(jsonb_build_object('platform', 'instagram', 'accountId', 'acc' || (i % 300), 'status',
           CASE WHEN i % 10 = 4 THEN 'failed' ELSE 'published' END)
           || CASE WHEN i % 10 = 4 THEN jsonb_build_object('errorCategory', 'auth_expired') ELSE '{}'::jsonb END),
         CASE WHEN i % 5000 = 7 THEN ARRAY['rare-tag'] ELSE ARRAY[(ARRAY['launch','spring','sale','news','event','promo','blog','hiring'])[1 + i % 8]] END,
         ARRAY['#' || (ARRAY['spring','summer','coffee'])[1 + i % 3]],
         (ARRAY['public','public','public','private','unlisted'])[1 + i % 5],
         jsonb_build_object('userId', 'user1', 'timezone', 'UTC', 'metadata', jsonb_build_object('crmId', 'A-' || i))
           || CASE WHEN i % 2 = 0 THEN jsonb_build_object('mediaItems', jsonb_build_array(jsonb_build_object('type', 'image', 'url', 'https://m.example/' || i || '.jpg'))) ELSE '{}'::jsonb END,
         ARRAY['acc' || (i % 300)], ARRAY['instagram'],
         CASE WHEN i % 10 = 4 THEN ARRAY['auth_expired'] ELSE ARRAY[]::text[] END,
         i % 2 = 0,
         timestamptz '2025-06-01' + i * interval '1 second', timestamptz '2026-01-01' + (i * 37 % 300000) * interval '1 minute',
         now(), now(), gen_random_uuid(), 1
    FROM generate_series(1, ${POSTS}) AS i`;

/** Every shape of GET /posts the query endpoint offers: each filter, each order both ways, and a page deep in the walk. */
// Every row has three items: jest takes a callback parameter a row does not fill for a `done` callback.
const SHAPES: Array<[string, Partial<ListPostsQuery>, string | null]> = [
  ['no filter', {}, null],
  ['q, a rare word', { q: 'zebra' }, 'post_search_idx'],
  ['q, a common word', { q: 'spring' }, null],
  ['q, non-English', { q: 'распродажа' }, null],
  ['tag, common', { tag: ['sale'] }, null],
  ['tag, rare', { tag: ['rare-tag'] }, 'post_filter_tokens_idx'],
  ['tag, any of two', { tag: ['rare-tag', 'hiring'] }, null],
  ['hashtag', { hashtag: ['#coffee'] }, null],
  ['visibility', { visibility: 'unlisted' }, null],
  ['errorCategory', { errorCategory: 'auth_expired' }, null],
  ['hasMedia', { hasMedia: true }, null],
  ['scheduledFrom/To', { scheduledFrom: '2026-02-01T00:00:00Z', scheduledTo: '2026-02-01T06:00:00Z' }, null],
  ['publishedFrom/To', { publishedFrom: '2026-03-01T00:00:00Z', publishedTo: '2026-03-01T06:00:00Z' }, null],
  ['status', { status: 'failed' }, null],
  ['sort=id:desc', { sort: 'id:desc' }, null],
  ['sort=scheduledFor:asc', { sort: 'scheduledFor:asc' }, null],
  ['sort=scheduledFor:desc', { sort: 'scheduledFor:desc' }, null],
  ['sort=publishedAt:desc', { sort: 'publishedAt:desc' }, null],
  ['sort=pozyUpdatedAt:asc', { sort: 'pozyUpdatedAt:asc' }, null],
  ['sort=pozyUpdatedAt:desc', { sort: 'pozyUpdatedAt:desc' }, null],
  ['tag + sort=scheduledFor:desc', { tag: ['sale'], sort: 'scheduledFor:desc' }, null],
  ['q + sort=publishedAt:desc', { q: 'coffee', sort: 'publishedAt:desc' }, null],
];

/**
 * What the list promises any shape at most (posts.query.ts, readPart): about √(page × posts) posts, where counting the
 * matches and walking the order cost the same; here with the page of 51 a list of 50 reads.
 */
const SQRT_BOUND = Math.round(Math.sqrt(51 * POSTS));

/**
 * Combinations whose filters the planner would take for independent, and searches for a common word: each reads a
 * bounded number of posts and pages however many posts the table holds, whether it matches none or many. Post i's
 * account is acc(i % 300), so acc1's posts are all scheduled; every post is on instagram, and only failed ones have
 * an error category. [name, shape, posts on the first page, most post rows visited, most pages touched]
 */
const BOUNDED: Array<[string, Partial<ListPostsQuery>, number, number, number]> = [
  ['status + platform, none', { status: 'published', platform: 'linkedin' }, 0, 10, 20],
  ['status + platform, none, sort=scheduledFor:desc', { status: 'published', platform: 'linkedin', sort: 'scheduledFor:desc' }, 0, 10, 20],
  ['status + platform, common', { status: 'published', platform: 'instagram' }, 50, 1_000, 1_000],
  // The rare token's posting list, and the pages of the common one's that the index skips to.
  ['accountId + status, none', { accountId: 'acc1', status: 'published' }, 0, 10, 100],
  ['accountId + status, few', { accountId: 'acc1', status: 'scheduled' }, 50, 10_000, 5_000],
  ['errorCategory + platform, none', { errorCategory: 'auth_expired', platform: 'linkedin' }, 0, 10, 20],
  // Each common alone, so the two look common together (2 %): a walk, cut at the bound, then their matches, none.
  ['errorCategory + status, none', { errorCategory: 'auth_expired', status: 'draft' }, 0, SQRT_BOUND + 51, SQRT_BOUND + 51],
  // Three filters that go together (every failed post here has the error category): the planner multiplies their
  // shares into a rare-looking 2 %, so their matches are counted up to the bound before the order is walked.
  [
    'errorCategory + platform + status',
    { errorCategory: 'auth_expired', platform: 'instagram', status: 'failed' },
    50,
    SQRT_BOUND + 1_000,
    SQRT_BOUND + 1_000,
  ],
  [
    'accountId + platform + status + errorCategory, none',
    { accountId: 'acc4', platform: 'instagram', status: 'published', errorCategory: 'auth_expired' },
    0,
    10,
    300,
  ],
  ['tag, rare, sort=publishedAt:desc', { tag: ['rare-tag'], sort: 'publishedAt:desc' }, 50, 1_000, 1_000],
  // The plain page, and the search and the tag the query bench measures: a page's neighbourhood, or the few matches.
  ['no filter', {}, 50, 200, 200],
  ['tag, common', { tag: ['sale'] }, 50, 1_000, 1_000],
  ['q, a rare word', { q: 'zebra' }, 50, 200, 500],
  ['q, a rare word, sort=scheduledFor:desc', { q: 'zebra', sort: 'scheduledFor:desc' }, 50, 200, 500],
  ['q, a common word', { q: 'spring' }, 50, 1_000, 1_000],
  ['q, a common word, sort=scheduledFor:desc', { q: 'coffee', sort: 'scheduledFor:desc' }, 50, 1_000, 1_000],
];

/** What LOAD holds, common and rare, and values no post holds. */
const VOCABULARY: ShapeVocabulary = {
  statuses: ['draft', 'scheduled', 'published', 'partial', 'failed'],
  platforms: ['instagram', 'linkedin'],
  accounts: ['acc1', 'acc4', 'acc17', 'acc299', 'acc-none'],
  profiles: ['prof1', 'prof-none'],
  errorCategories: ['auth_expired', 'rate_limited'],
  visibilities: ['public', 'private', 'unlisted'],
  tags: ['launch', 'sale', 'hiring', 'rare-tag', 'no-such-tag'],
  hashtags: ['#spring', '#summer', '#coffee', '#none'],
  words: ['spring', 'coffee', 'tea', 'zebra', 'title', 'распродажа', 'nonexistentword'],
  around: new Date('2026-03-01T00:00:00Z'),
};

/** A drawn shape as the endpoint's query object (what the DTO makes of its query string). */
function listQuery(shape: PostShape): Partial<ListPostsQuery> {
  const { hasMedia, includeDeleted, tag, hashtag, ...rest } = shape.query;
  return {
    ...(rest as Record<string, string>),
    ...(tag !== undefined ? { tag: [tag].flat() } : {}),
    ...(hashtag !== undefined ? { hashtag: [hashtag].flat() } : {}),
    ...(hasMedia !== undefined ? { hasMedia: hasMedia === 'true' } : {}),
    ...(includeDeleted !== undefined ? { includeDeleted: true } : {}),
    limit: shape.limit,
  };
}

/** The statements that read the post table, without the planner's estimates (EXPLAIN) a list asks for. */
const readsOfPosts = (statements: SentStatement[]) =>
  statements.filter(({ statement }) => /from "post"/i.test(statement.sql) && !/^explain/i.test(statement.sql));

describe('GET /posts on 500,000 whole posts: every filter and every order is served by an index', () => {
  let db: TestDatabase;
  let pool: Pool;
  let sent: () => SentStatement[];
  let posts: PostsQuery;

  beforeAll(async () => {
    db = await createTestDatabase('post_plans');
    // The service's own migrations make the schema.
    await (await startService(db.url, { ROLE: 'api' })).close();
    const client = new Client({ connectionString: db.url });
    await client.connect();
    try {
      await withIndexesDeferred(client, ['post'], async () => {
        await client.query(LOAD);
      });
      await client.query('ANALYZE post');
    } finally {
      await client.end();
    }
    // Connected as the query endpoints' pools connect (their statement timeout, no parallel workers).
    pool = new Pool({
      connectionString: db.url,
      max: 2,
      ...queryPoolOptions(AppConfig.fromEnvironment({ DATABASE_URL: db.url, POZY_API_KEY: 'sk_test', LOG_LEVEL: 'error' })),
    });
    // The endpoint's own query builder, on a database of its own: what it sends is what is explained.
    const recording = recordingDatabase(pool);
    sent = recording.sent;
    posts = new PostsQuery(recording.database);
  }, 600_000);

  afterAll(async () => {
    await pool?.end();
    await db?.drop();
  });

  it.each(SHAPES)('%s: no sequential scan of the post table, first page and a page after a cursor', async (name, shape, selective) => {
    const first = await posts.list({ limit: 50, ...shape });
    expect(first.data.length).toBeGreaterThan(0);
    const pages = [first];
    if (first.nextCursor) pages.push(await posts.list({ limit: 50, ...shape, cursor: first.nextCursor }));
    // Each statement is explained under the settings its transaction set before it (SET LOCAL), as it ran.
    const statements = readsOfPosts(sent());
    expect(statements.length).toBeGreaterThan(0);
    const report: string[] = [];
    const used: string[] = [];
    for (const statement of statements) {
      const { plan, ms } = await explainAnalyzed(pool, statement);
      const all = planNodes(plan);
      expect(all.filter((node) => node['Node Type'] === 'Seq Scan' && node['Relation Name'] === 'post')).toEqual([]);
      const indexes = [...new Set(all.map((node) => node['Index Name']).filter((name): name is string => name !== undefined))];
      expect(indexes.length).toBeGreaterThan(0);
      used.push(...indexes);
      report.push(`${indexes.join(' + ')} (${ms.toFixed(1)} ms)`);
    }
    // A rare match is found through its own index, not by walking the posts in order until enough turn up.
    if (selective) expect(used).toContain(selective);
    process.stdout.write(`  ${name.padEnd(30)} ${report.join('; ')}\n`);
  });

  it.each(BOUNDED)(
    '%s: reads a bounded number of posts and pages, on the first page and after a cursor',
    async (name, shape, page, maxRows, maxPages) => {
      const first = await posts.list({ limit: 50, ...shape });
      expect(first.data.length).toBe(page);
      if (first.nextCursor) await posts.list({ limit: 50, ...shape, cursor: first.nextCursor });
      const report: string[] = [];
      for (const statement of readsOfPosts(sent())) {
        const { plan } = await explainAnalyzed(pool, statement);
        const rows = rowsVisitedIn(plan, 'post');
        const pages = pagesTouched(plan);
        report.push(`${rows} rows, ${pages} pages`);
        expect(planNodes(plan).filter((node) => node['Node Type'] === 'Seq Scan' && node['Relation Name'] === 'post')).toEqual([]);
        // A worker started for a page costs more than the page (5 ms, where the index answers in 0.03 ms).
        expect(planNodes(plan).filter((node) => /^Gather/.test(node['Node Type']))).toEqual([]);
        expect(rows).toBeLessThanOrEqual(maxRows);
        expect(pages).toBeLessThanOrEqual(maxPages);
      }
      process.stdout.write(`  ${name.padEnd(50)} ${report.join('; ')}\n`);
    },
  );

  it('any drawn combination of filters, order and limit reads at most about √(page × posts) posts a statement', async () => {
    const seed = 20261206;
    const report: Array<{ shape: string; rows: number; pages: number }> = [];
    for (const shape of drawShapes(VOCABULARY, 60, seed)) {
      sent();
      const query = listQuery(shape);
      const first = await posts.list(query);
      if (shape.secondPage && first.nextCursor) await posts.list({ ...query, cursor: first.nextCursor });
      // Counting the matches (√(take × posts)), then a walk of four times that, then the matches when the walk found
      // too few: each statement within the walk's budget.
      const bound = 4 * Math.sqrt((shape.limit + 1) * POSTS) + shape.limit + 1;
      for (const statement of readsOfPosts(sent())) {
        const { plan } = await explainAnalyzed(pool, statement);
        const rows = rowsVisitedIn(plan, 'post');
        const pages = pagesTouched(plan);
        report.push({ shape: JSON.stringify(shape), rows, pages });
        expect(planNodes(plan).filter((node) => node['Node Type'] === 'Seq Scan' && node['Relation Name'] === 'post')).toEqual([]);
        expect(planNodes(plan).filter((node) => /^Gather/.test(node['Node Type']))).toEqual([]);
        if (rows > bound)
          throw new Error(`seed ${seed}: ${JSON.stringify(shape)} read ${rows} posts in one statement, more than ${Math.round(bound)}`);
      }
    }
    const worst = [...report].sort((a, b) => b.rows - a.rows).slice(0, 5);
    process.stdout.write(
      `  drawn shapes, the most posts read by one statement:\n${worst.map((w) => `    ${w.rows} rows, ${w.pages} pages: ${w.shape}`).join('\n')}\n`,
    );
  });

  it("a page's profileIds come stored with each post: the page reads no account", async () => {
    // Post i's account is acc(i % 300), of profile prof(i % 20): two of them mirrored now, and their posts rewritten as
    // refreshProfiles rewrites them (a new sequence), which stores their answers with the profiles.
    // Written as the service writes, without the query endpoints' statement timeout.
    const writer = new Client({ connectionString: db.url });
    await writer.connect();
    await writer.query(
      `INSERT INTO account (workspace_id, id, profile_id, platform, is_active, needs_reconnection, synced_at, read_started_at, read_id)
       SELECT 'default', 'acc' || i, 'prof' || (i % 20), 'instagram', true, false, now(), now(), gen_random_uuid()
         FROM generate_series(1, 2) AS i`,
    );
    await writer.query(`UPDATE post SET sequence = sequence + 1 WHERE workspace_id = 'default' AND account_ids && ARRAY['acc1', 'acc2']`);
    await writer.end();
    sent(); // what earlier tests sent
    const page = await posts.list({ limit: 50 });
    const profiles = page.data.map((text) => (JSON.parse(text) as { id: string; profileIds: string[] }).profileIds);
    expect(profiles.slice(0, 3)).toEqual([['prof1'], ['prof2'], []]);
    expect(profiles.slice(3)).toEqual(Array(47).fill([]));
    for (const statement of readsOfPosts(sent())) {
      const { plan } = await explainAnalyzed(pool, statement);
      expect(rowsVisitedIn(plan, 'account')).toBe(0);
    }
  });
});
