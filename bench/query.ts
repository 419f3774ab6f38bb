/**
 * The query scenario of npm run bench: `GET /posts?limit=50` on a mirror of BENCH_QUERY_POSTS posts (default 500,000,
 * inserted with SQL), against a bare Fastify + pg endpoint running one fixed keyset statement on the same database.
 * Also measures a filtered list (`status=published&platform=linkedin`) and a second page (with a cursor).
 *
 *   BENCH_QUERY_POSTS (default 500000), BENCH_DURATION_S (default 10), BENCH_QUERY_CONNECTIONS (default 20)
 */
/* eslint-disable no-console -- a command-line report */
import { join } from 'node:path';
import autocannon from 'autocannon';
import { Client } from 'pg';
import { freePort, waitForHttp } from './net';
import { BUILT_SERVICE, cell, startProcess, stopProcess, withDatabase } from './processes';

const settings = {
  posts: Number(process.env.BENCH_QUERY_POSTS ?? 500_000),
  durationS: Number(process.env.BENCH_DURATION_S ?? 10),
  connections: Number(process.env.BENCH_QUERY_CONNECTIONS ?? 20),
};

interface Measured {
  name: string;
  requestsPerSecond: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
}

/** 500k posts over 200 accounts on 20 profiles, every tenth deleted, in one statement each. */
async function seed(databaseUrl: string): Promise<void> {
  const client = new Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query(`
      INSERT INTO account (id, profile_id, platform, username, display_name, is_active, needs_reconnection, synced_at, read_started_at, read_id)
      SELECT 'acct' || lpad(n::text, 20, '0'), 'prof' || lpad((n % 20)::text, 20, '0'),
             (ARRAY['linkedin','twitter','instagram','facebook'])[1 + n % 4], 'user' || n, 'User ' || n, true, false,
             now(), now(), gen_random_uuid()
        FROM generate_series(0, 199) n`);
    await client.query(
      `INSERT INTO post (id, status, content, scheduled_for, published_at, platforms, account_ids, platform_names,
                         pozy_created_at, pozy_updated_at, last_event_at, synced_at, read_started_at, read_id, deleted_at)
       SELECT lpad(to_hex(n), 24, '0'),
              (ARRAY['draft','scheduled','published','failed'])[1 + n % 4],
              'Post number ' || n || ' of the bench workspace',
              now() - make_interval(mins => n), now() - make_interval(mins => n),
              jsonb_build_array(jsonb_build_object('platform', (ARRAY['linkedin','twitter','instagram','facebook'])[1 + n % 4],
                                                   'accountId', 'acct' || lpad((n % 200)::text, 20, '0'), 'status', 'published')),
              ARRAY['acct' || lpad((n % 200)::text, 20, '0')],
              ARRAY[(ARRAY['linkedin','twitter','instagram','facebook'])[1 + n % 4]],
              now() - make_interval(mins => n), now() - make_interval(mins => n), now(), now(), now(), gen_random_uuid(),
              CASE WHEN n % 10 = 0 THEN now() END
         FROM generate_series(1, $1::int) n`,
      [settings.posts],
    );
    await client.query('VACUUM ANALYZE post');
    await client.query('VACUUM ANALYZE account');
  } finally {
    await client.end();
  }
}

async function secondPageCursor(url: string): Promise<string> {
  const response = await fetch(`${url}/posts?limit=50`);
  const body = (await response.json()) as { nextCursor: string | null };
  if (!body.nextCursor) throw new Error('the first page had no next cursor');
  return body.nextCursor;
}

async function measure(name: string, url: string, path: string): Promise<Measured> {
  await autocannon({ url: `${url}${path}`, connections: settings.connections, duration: 2 });
  const result = await autocannon({ url: `${url}${path}`, connections: settings.connections, duration: settings.durationS });
  return {
    name,
    requestsPerSecond: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
  };
}

async function serve<T>(script: string, env: Record<string, string>, run: (url: string) => Promise<T>): Promise<T> {
  const port = await freePort();
  const child = startProcess(script, { ...env, PORT: String(port) });
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
    await serve(BUILT_SERVICE, service, () => seed(databaseUrl));
    console.log('done');
    const rows: Measured[] = [];
    process.stdout.write('  baseline... ');
    rows.push(
      await serve(join(__dirname, 'baseline-query.js'), { DATABASE_URL: databaseUrl }, (url) =>
        measure('baseline (one fixed statement)', url, '/posts'),
      ),
    );
    console.log('done');
    process.stdout.write('  pozy-sync... ');
    await serve(BUILT_SERVICE, service, async (url) => {
      rows.push(await measure('pozy-sync GET /posts?limit=50', url, '/posts?limit=50'));
      rows.push(await measure('pozy-sync, status + platform', url, '/posts?limit=50&status=published&platform=linkedin'));
      const cursor = await secondPageCursor(url);
      rows.push(await measure('pozy-sync, second page', url, `/posts?limit=50&cursor=${encodeURIComponent(cursor)}`));
    });
    console.log('done');
    report(rows);
  });
}

function report(rows: Measured[]): void {
  const [baseline, ...service] = rows;
  console.log('');
  console.log(`Query path: ${settings.posts.toLocaleString('en')} posts, ${settings.connections} connections, ${settings.durationS} s each`);
  console.log(`${'endpoint'.padEnd(40)}${['req/s', 'p50 ms', 'p99 ms', 'non-2xx', 'errors'].map((h) => h.padStart(10)).join('')}`);
  for (const r of rows) {
    console.log(`${r.name.padEnd(40)}${cell(r.requestsPerSecond)}${cell(r.p50, 1)}${cell(r.p99, 1)}${cell(r.non2xx)}${cell(r.errors)}`);
  }
  console.log('');
  for (const r of service) {
    console.log(
      `${r.name}: ${(r.requestsPerSecond / baseline.requestsPerSecond).toFixed(2)}x the baseline's throughput, p99 ${(r.p99 / baseline.p99).toFixed(2)}x`,
    );
  }
}
