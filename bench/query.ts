/**
 * The query scenario of npm run bench: GET /posts on a mirror of BENCH_QUERY_POSTS whole posts (default 500,000, over
 * 200 accounts, inserted with one SQL statement: see POST_ROWS), against a bare Fastify + pg endpoint running one fixed
 * keyset statement over the same whole rows (baseline-query.ts). Measured, each at BENCH_QUERY_CONNECTIONS:
 * `limit=50` alone, `status=published&platform=linkedin` (which matches no post here), a second page (with a cursor),
 * `q` with a common word (`coffee`, about a seventh of the posts) and with a rare one (`zebra`, one in 10,000), `tag=sale`
 * and `sort=scheduledFor:desc`; filter combinations that match no post (`accountId` + `status`, `errorCategory` + `platform`),
 * one that matches a quarter of them (`status=published&platform=instagram`), a rare tag in an order, and a common word
 * in an order. Each endpoint is requested once before its load: the table shows how many posts its
 * first page held, and any answer other than 2xx (printed, and counted in the non-2xx column) is flagged at the end.
 * Before the load it prints what the post table takes on disk after VACUUM ANALYZE: heap, indexes, TOAST, in total and
 * per post.
 *
 * Then BENCH_QUERY_SHAPES shapes drawn from BENCH_QUERY_SEED (post-shapes.ts: any combination of filters, orders,
 * limits, `q` words common and rare, second pages), each measured for BENCH_QUERY_SHAPE_S seconds, reported as a share
 * of the plain page's throughput and p99 in the same run, the worst first, with the goal (every shape at 0.5x or more,
 * p99 at most 4x).
 *
 *   BENCH_QUERY_POSTS (default 500000), BENCH_DURATION_S (default 10), BENCH_QUERY_CONNECTIONS (default 20),
 *   BENCH_QUERY_SHAPES (default 100), BENCH_QUERY_SEED (default 20261206), BENCH_QUERY_SHAPE_S (default 2),
 *   BENCH_QUERY_BEFORE (another build's dist/main.js: its plain page and drawn shapes are measured too, on the same
 *   database in the same run, for a before and after),
 *   BENCH_CPU_PROF_DIR (the measured service writes a CPU profile there, node --cpu-prof)
 */
/* eslint-disable no-console -- a command-line report */
import { join } from 'node:path';
import autocannon from 'autocannon';
import { Client } from 'pg';
import { freePort, waitForHttp } from './net';
import { drawShapes, shapePath, ShapeVocabulary } from './post-shapes';
import { BUILT_SERVICE, cell, startProcess, stopProcess, withDatabase } from './processes';

const settings = {
  posts: Number(process.env.BENCH_QUERY_POSTS ?? 500_000),
  durationS: Number(process.env.BENCH_DURATION_S ?? 10),
  connections: Number(process.env.BENCH_QUERY_CONNECTIONS ?? 20),
  shapes: Number(process.env.BENCH_QUERY_SHAPES ?? 100),
  seed: Number(process.env.BENCH_QUERY_SEED ?? 20261206),
  shapeS: Number(process.env.BENCH_QUERY_SHAPE_S ?? 2),
  before: process.env.BENCH_QUERY_BEFORE,
};

/** What POST_ROWS holds, common and rare, and values no post holds: the drawn shapes ask about these. */
const VOCABULARY: ShapeVocabulary = {
  statuses: ['draft', 'scheduled', 'published', 'failed'],
  platforms: ['linkedin', 'twitter', 'instagram', 'facebook', 'tiktok'],
  accounts: ['acct' + '5'.padStart(20, '0'), 'acct' + '17'.padStart(20, '0'), 'acct' + '150'.padStart(20, '0'), 'acct-none'],
  profiles: ['prof' + '3'.padStart(20, '0'), 'prof-none'],
  errorCategories: ['auth_expired', 'platform_rate_limit', 'unknown', 'no_such_category'],
  visibilities: ['public', 'private', 'unlisted'],
  tags: ['launch', 'sale', 'hiring', 'rare-tag', 'no-such-tag'],
  hashtags: ['#spring', '#coffee', '#behindthescenes', '#none'],
  words: ['coffee', 'spring', 'news', 'zebra', 'bakery', 'распродажа', 'nonexistentword'],
  around: new Date(),
};

interface Measured {
  name: string;
  /** The first page's posts, fetched once before the load: a filter that matches nothing is fast for that reason. */
  pageRows: number;
  requestsPerSecond: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
}

/**
 * The posts, whole: every column a read of Pozy fills. Per post n (1..BENCH_QUERY_POSTS), as before the mirror kept
 * whole posts: account n % 200 (its platform n % 4), status draft/scheduled/published/failed by n % 4 (so status and
 * platform go together: `status=published&platform=linkedin` matches no post), times n minutes ago, every tenth
 * deleted. Besides:
 *   title       on 80% (n % 5 > 0): three words from small vocabularies in English, German, French, Spanish, Russian
 *   content     150 to 300 characters: an opener, a body (one in seven about coffee), a call to action on a third, a
 *               link; the rare word `zebra` in one post in 10,000
 *   tags        one or two of 8 (`sale` on about a fifth), none on a tenth, `rare-tag` alone on one in 5,000
 *   hashtags    none to three of 6
 *   visibility  public on 70%, private 10%, unlisted 20%
 *   platforms   the one target whole: pending (draft, scheduled), published with platformPostId/Url and publishedAt,
 *               failed with errorMessage, errorCategory (10 categories), errorSource and platformError
 *   extra       userId, timezone; mediaItems (one or two) on half, mentions on half, metadata {crmId, campaign} on
 *               half, the queue fields on a fifth (recycling on half of those)
 *   error_categories and has_media as the service derives them from platforms and extra.mediaItems
 */
const POST_ROWS = `
  WITH p AS (
    SELECT n,
           (ARRAY['linkedin','twitter','instagram','facebook'])[1 + n % 4] AS platform,
           'acct' || lpad((n % 200)::text, 20, '0') AS account,
           (ARRAY['draft','scheduled','published','failed'])[1 + n % 4] AS status,
           (ARRAY['auth_expired','user_content','user_abuse','account_issue','platform_rejected','platform_error',
                  'platform_rate_limit','quota_exhausted','system_error','unknown'])[1 + (n / 4) % 10] AS category,
           (ARRAY['user','user','user','user','platform','platform','platform','user','system','system'])[1 + (n / 4) % 10] AS source,
           (n / 3) % 2 = 0 AS media,
           now() - make_interval(mins => n) AS at
      FROM generate_series(1, $1::int) n)
  INSERT INTO post (workspace_id, id, status, title, content, scheduled_for, published_at, platforms, tags, hashtags, visibility, extra,
                    account_ids, platform_names, error_categories, has_media,
                    pozy_created_at, pozy_updated_at, last_event_at, synced_at, read_started_at, read_id, deleted_at)
  SELECT 'default', lpad(to_hex(n), 24, '0'),
         status,
         CASE WHEN n % 5 > 0 THEN
           (ARRAY['Spring','Summer','Autumn','Winter','Frühling','Printemps','Primavera','Весна','Holiday'])[1 + n % 9] || ' ' ||
           (ARRAY['sale','launch','update','Angebot','soldes','oferta','распродажа','news'])[1 + (n / 9) % 8] || ' ' ||
           (ARRAY['for teams','this week','2027','am Wochenende','en ligne','para todos','сегодня'])[1 + (n / 72) % 7]
         END,
         (ARRAY['Big news from our team today.',
                'We have been working on something new for a while, and it is finally here.',
                'Quick reminder for everyone who asked last week.',
                'Neuigkeiten aus unserem Team: wir haben etwas Neues für euch.',
                'Nouvelle saison, nouvelles idées : voici ce qui arrive.',
                'Novedades de la semana para toda la comunidad.'])[1 + n % 6] || ' ' ||
         (ARRAY['Our new coffee blend is roasted in small batches and ships within two days.',
                'The spring collection is in stores now, with sizes for everyone.',
                'Join the live session on Thursday for a walkthrough and questions.',
                'Three things we learned shipping the last release, in a short thread.',
                'Tickets for the autumn meetup are open; seats are limited.',
                'Our guide to planning a month of posts in one afternoon.',
                'Customer story: how a small bakery doubled its orders online.'])[1 + (n / 3) % 7] ||
         CASE WHEN n % 3 = 0 THEN ' Tell us what you think in the comments, or send us a message any time.' ELSE '' END ||
         CASE WHEN n % 10000 = 7 THEN ' Spotted a zebra at the studio today.' ELSE '' END ||
         ' https://pozy.example/p/' || to_hex(n),
         at, at,
         jsonb_build_array(jsonb_build_object('platform', platform, 'accountId', account,
                                              'status', CASE status WHEN 'published' THEN 'published' WHEN 'failed' THEN 'failed' ELSE 'pending' END)
           || CASE status
                WHEN 'published' THEN jsonb_build_object('platformPostId', '7' || lpad(n::text, 18, '0'),
                                                         'platformPostUrl', 'https://' || platform || '.example/p/' || n,
                                                         'publishedAt', to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
                WHEN 'failed' THEN jsonb_build_object('errorMessage', 'Publishing failed: ' || replace(category, '_', ' '),
                                                      'errorCategory', category, 'errorSource', source,
                                                      'platformError', jsonb_build_object('code', 190, 'subcode', 460,
                                                                                          'message', 'Error validating access token'))
                ELSE '{}'::jsonb
              END),
         CASE WHEN n % 5000 = 7 THEN ARRAY['rare-tag']
              WHEN n % 10 = 9 THEN ARRAY[]::text[]
              WHEN n % 3 = 0 THEN ARRAY[(ARRAY['launch','spring','sale','news','event','promo','blog','hiring'])[1 + (n / 5) % 8],
                                        (ARRAY['launch','spring','sale','news','event','promo','blog','hiring'])[1 + (n / 5 + 3) % 8]]
              ELSE ARRAY[(ARRAY['launch','spring','sale','news','event','promo','blog','hiring'])[1 + (n / 5) % 8]]
         END,
         (ARRAY['#spring','#coffee','#news','#behindthescenes','#sale','#teamwork'])[1 + (n / 13) % 6 : (n / 13) % 6 + (n / 11) % 4],
         (ARRAY['public','public','public','public','public','public','public','private','unlisted','unlisted'])[1 + (n / 7) % 10],
         jsonb_build_object('userId', 'user' || lpad((n % 3)::text, 20, '0'),
                            'timezone', (ARRAY['UTC','Europe/Berlin','America/New_York','Europe/Paris','Asia/Tokyo'])[1 + (n / 17) % 5])
           || CASE WHEN media THEN jsonb_build_object('mediaItems',
                CASE WHEN (n / 6) % 2 = 0
                  THEN jsonb_build_array(jsonb_build_object('type', 'image', 'url', 'https://media.pozy.example/' || n || '-1.jpg', 'altText', 'Photo ' || n),
                                         jsonb_build_object('type', 'image', 'url', 'https://media.pozy.example/' || n || '-2.jpg'))
                  ELSE jsonb_build_array(jsonb_build_object('type', 'video', 'url', 'https://media.pozy.example/' || n || '.mp4',
                                                            'thumbnail', 'https://media.pozy.example/' || n || '-thumb.jpg'))
                END) ELSE '{}'::jsonb END
           || CASE WHEN (n / 19) % 2 = 0 THEN jsonb_build_object('mentions', jsonb_build_array('@pozy', '@partner' || n % 50)) ELSE '{}'::jsonb END
           || CASE WHEN (n / 23) % 2 = 0 THEN jsonb_build_object('metadata', jsonb_build_object('crmId', 'A-' || n,
                'campaign', (ARRAY['spring-2027','black-friday','launch-week','always-on','hiring'])[1 + (n / 29) % 5])) ELSE '{}'::jsonb END
           || CASE WHEN (n / 31) % 5 = 0 THEN jsonb_build_object('queuedFromProfile', 'prof' || lpad((n % 20)::text, 20, '0'),
                'queueId', 'queue' || lpad((n % 20)::text, 20, '0'))
                || CASE WHEN (n / 31) % 2 = 0 THEN jsonb_build_object('recycling', jsonb_build_object('enabled', true, 'intervalDays', 30)) ELSE '{}'::jsonb END
              ELSE '{}'::jsonb END,
         ARRAY[account], ARRAY[platform],
         CASE WHEN status = 'failed' THEN ARRAY[category] ELSE ARRAY[]::text[] END,
         media,
         at, at, now(), now(), now(), gen_random_uuid(),
         CASE WHEN n % 10 = 0 THEN now() END
    FROM p`;

/** Account n % 200 = 5: its posts (n % 4 = 1) are all on twitter and scheduled. */
const ACCOUNT_5 = 'acct' + '5'.padStart(20, '0');

interface Storage {
  rows: number;
  total: number;
  heap: number;
  indexes: number;
  toast: number;
}

/** BENCH_QUERY_POSTS posts over 200 accounts on 20 profiles, in one statement each; then what the post table takes. */
export async function seed(databaseUrl: string): Promise<Storage> {
  const client = new Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query(`
      INSERT INTO account (workspace_id, id, profile_id, platform, username, display_name, is_active, needs_reconnection, synced_at, read_started_at, read_id)
      SELECT 'default', 'acct' || lpad(n::text, 20, '0'), 'prof' || lpad((n % 20)::text, 20, '0'),
             (ARRAY['linkedin','twitter','instagram','facebook'])[1 + n % 4], 'user' || n, 'User ' || n, true, false,
             now(), now(), gen_random_uuid()
        FROM generate_series(0, 199) n`);
    await client.query(POST_ROWS, [settings.posts]);
    await client.query('VACUUM ANALYZE post');
    await client.query('VACUUM ANALYZE account');
    // pg_relation_size: the heap's main fork; the TOAST table with its own index.
    const { rows } = await client.query<Record<keyof Storage, string>>(
      `SELECT (SELECT count(*) FROM post) AS rows,
              pg_total_relation_size('post') AS total,
              pg_relation_size('post') AS heap,
              pg_indexes_size('post') AS indexes,
              coalesce((SELECT pg_total_relation_size(reltoastrelid) FROM pg_class WHERE oid = 'post'::regclass AND reltoastrelid <> 0), 0) AS toast`,
    );
    const [r] = rows;
    return { rows: Number(r.rows), total: Number(r.total), heap: Number(r.heap), indexes: Number(r.indexes), toast: Number(r.toast) };
  } finally {
    await client.end();
  }
}

function reportStorage(s: Storage): void {
  const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;
  const per = (bytes: number) => (bytes / s.rows).toFixed(0);
  console.log(
    `  post table, ${s.rows.toLocaleString('en')} rows: table ${mb(s.heap)}, indexes ${mb(s.indexes)}, TOAST ${mb(s.toast)}, total ${mb(s.total)}`,
  );
  console.log(`  bytes per post: table ${per(s.heap)}, indexes ${per(s.indexes)}, total ${per(s.total)}`);
  if (s.toast > 0) console.log(`  bytes per post in TOAST (its heap and index, within the total): ${(s.toast / s.rows).toFixed(1)}`);
}

async function secondPageCursor(url: string): Promise<string> {
  const response = await fetch(`${url}/posts?limit=50`);
  const body = (await response.json()) as { nextCursor: string | null };
  if (!body.nextCursor) throw new Error('the first page had no next cursor');
  return body.nextCursor;
}

/** `path` under load for `durationS` (after `warmS` of the same), its first page's size fetched once before. */
async function measure(name: string, url: string, path: string, { warmS = 2, durationS = settings.durationS } = {}): Promise<Measured> {
  // One request first: a wrong parameter shows here as its 400 and the service's message, not as a fast row.
  const response = await fetch(`${url}${path}`);
  const text = await response.text();
  let pageRows = NaN;
  if (response.ok) pageRows = ((JSON.parse(text) as { data?: unknown[] }).data ?? []).length;
  else console.log(`\n  ${name}: GET ${path} answered ${response.status}: ${text.slice(0, 300)}`);
  if (warmS > 0) await autocannon({ url: `${url}${path}`, connections: settings.connections, duration: warmS });
  const result = await autocannon({ url: `${url}${path}`, connections: settings.connections, duration: durationS });
  return {
    name,
    pageRows,
    requestsPerSecond: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
  };
}

async function serve<T>(script: string, env: Record<string, string>, run: (url: string) => Promise<T>, nodeArgs: string[] = []): Promise<T> {
  const port = await freePort();
  const child = startProcess(script, { ...env, PORT: String(port) }, nodeArgs);
  try {
    const url = `http://127.0.0.1:${port}`;
    await waitForHttp(`${url}/health/ready`, 60_000);
    return await run(url);
  } finally {
    await stopProcess(child);
  }
}

export async function runQueryScenario(serverUrl: string): Promise<void> {
  await withDatabase(serverUrl, 'pozy_bench_query', async (databaseUrl) => {
    const service = {
      DATABASE_URL: databaseUrl,
      HOST: '127.0.0.1',
      ROLE: 'api',
      INITIAL_IMPORT: 'off',
      POZY_API_URL: 'http://127.0.0.1:9',
      POZY_API_KEY: 'sk_bench',
      POZY_WEBHOOK_SECRET: 'whsec_bench',
      LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'log',
      LOG_FORMAT: 'json',
    };
    // The service creates the tables; the posts go in once it has.
    process.stdout.write(`  seeding ${settings.posts.toLocaleString('en')} posts... `);
    const storage = await serve(BUILT_SERVICE, service, () => seed(databaseUrl));
    console.log('done');
    reportStorage(storage);
    const rows: Measured[] = [];
    const drawn: Measured[] = [];
    process.stdout.write('  baseline... ');
    rows.push(
      await serve(join(__dirname, 'baseline-query.js'), { DATABASE_URL: databaseUrl }, (url) =>
        measure('baseline (one fixed statement)', url, '/posts'),
      ),
    );
    console.log('done');
    process.stdout.write('  pozy-sync... ');
    const profileDir = process.env.BENCH_CPU_PROF_DIR;
    const profiling = profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [];
    await serve(
      BUILT_SERVICE,
      service,
      async (url) => {
        rows.push(await measure('pozy-sync GET /posts?limit=50', url, '/posts?limit=50'));
        rows.push(await measure('pozy-sync, status + platform', url, '/posts?limit=50&status=published&platform=linkedin'));
        const cursor = await secondPageCursor(url);
        rows.push(await measure('pozy-sync, second page', url, `/posts?limit=50&cursor=${encodeURIComponent(cursor)}`));
        rows.push(await measure('pozy-sync, q common word (coffee)', url, '/posts?limit=50&q=coffee'));
        rows.push(await measure('pozy-sync, q rare word (zebra)', url, '/posts?limit=50&q=zebra'));
        rows.push(await measure('pozy-sync, tag=sale', url, '/posts?limit=50&tag=sale'));
        rows.push(await measure('pozy-sync, sort=scheduledFor:desc', url, '/posts?limit=50&sort=scheduledFor:desc'));
        // Filter combinations that match no post here (account 5 and its posts are on twitter, never published; only
        // failed posts, all on facebook, have an error category), one that matches a quarter, and a rare tag in an order.
        rows.push(await measure('pozy-sync, accountId + status', url, `/posts?limit=50&accountId=${ACCOUNT_5}&status=published`));
        rows.push(await measure('pozy-sync, errorCategory + platform', url, '/posts?limit=50&errorCategory=auth_expired&platform=linkedin'));
        rows.push(await measure('pozy-sync, status + platform, common', url, '/posts?limit=50&status=published&platform=instagram'));
        rows.push(await measure('pozy-sync, tag=rare-tag + sort', url, '/posts?limit=50&tag=rare-tag&sort=scheduledFor:desc'));
        rows.push(await measure('pozy-sync, q common word + sort', url, '/posts?limit=50&q=coffee&sort=publishedAt:desc'));
        drawn.push(...(await measureShapes(url)));
      },
      profiling,
    );
    console.log('done');
    report(rows);
    reportShapes('this build', rows[1], drawn);
    if (settings.before) {
      process.stdout.write(`  ${settings.before}... `);
      const [plain, shapes] = await serve(
        settings.before,
        service,
        async (url) => [await measure('before: GET /posts?limit=50', url, '/posts?limit=50'), await measureShapes(url)] as const,
      );
      console.log('done');
      reportShapes(`before (${settings.before})`, plain, shapes);
    }
  });
}

/** The drawn shapes, each for BENCH_QUERY_SHAPE_S at the bench's connections; a second page through the first's cursor. */
async function measureShapes(url: string): Promise<Measured[]> {
  const measured: Measured[] = [];
  for (const shape of drawShapes(VOCABULARY, settings.shapes, settings.seed)) {
    let path = shapePath(shape);
    if (shape.secondPage) {
      const first = (await (await fetch(`${url}${path}`)).json()) as { nextCursor?: string | null };
      if (first.nextCursor) path = shapePath(shape, first.nextCursor);
    }
    measured.push(await measure(path, url, path, { warmS: 0, durationS: settings.shapeS }));
  }
  return measured;
}

/** The drawn shapes against the plain page of the same run: the ten worst, and how many meet the goal. */
function reportShapes(build: string, plain: Measured, drawn: Measured[]): void {
  if (drawn.length === 0) return;
  const share = (r: Measured) => r.requestsPerSecond / plain.requestsPerSecond;
  const worst = [...drawn].sort((a, b) => share(a) - share(b));
  const meeting = drawn.filter((r) => share(r) >= 0.5 && r.p99 <= 4 * plain.p99 && r.non2xx === 0 && r.errors === 0).length;
  console.log('');
  console.log(
    `Drawn shapes on ${build} (seed ${settings.seed}, ${drawn.length} shapes, ${settings.shapeS} s each), against its plain page (${plain.requestsPerSecond.toFixed(0)} req/s, p99 ${plain.p99.toFixed(0)} ms):`,
  );
  console.log(`  ${meeting} of ${drawn.length} at 0.5x its throughput or more with p99 at most 4x its p99 (the goal)`);
  for (const r of worst.slice(0, 10)) {
    console.log(
      `  ${share(r).toFixed(2)}x throughput, p99 ${(r.p99 / plain.p99).toFixed(2)}x (${r.p99.toFixed(0)} ms), ${r.pageRows} posts: GET ${r.name}`,
    );
  }
  console.log(`  median share ${share(worst[Math.floor(worst.length / 2)]).toFixed(2)}x`);
}

function report(rows: Measured[]): void {
  const [baseline, ...service] = rows;
  console.log('');
  console.log(`Query path: ${settings.posts.toLocaleString('en')} posts, ${settings.connections} connections, ${settings.durationS} s each`);
  console.log(`${'endpoint'.padEnd(40)}${['page rows', 'req/s', 'p50 ms', 'p99 ms', 'non-2xx', 'errors'].map((h) => h.padStart(10)).join('')}`);
  for (const r of rows) {
    console.log(
      `${r.name.padEnd(40)}${cell(r.pageRows)}${cell(r.requestsPerSecond)}${cell(r.p50, 1)}${cell(r.p99, 1)}${cell(r.non2xx)}${cell(r.errors)}`,
    );
  }
  console.log('');
  for (const r of service) {
    console.log(
      `${r.name}: ${(r.requestsPerSecond / baseline.requestsPerSecond).toFixed(2)}x the baseline's throughput, p99 ${(r.p99 / baseline.p99).toFixed(2)}x`,
    );
  }
  const failing = rows.filter((r) => r.non2xx > 0 || r.errors > 0);
  for (const r of failing) console.log(`WARNING ${r.name}: ${r.non2xx} non-2xx answers, ${r.errors} errors: its numbers are not a list's`);
}
