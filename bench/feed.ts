/**
 * The feed scenario of npm run bench: a consumer following the change feed (`GET /changes?wait=25&limit=1000`,
 * long polls) beside one polling `GET /posts?updatedSince=<the newest pozyUpdatedAt it has seen>&includeDeleted=true`
 * every second (every page of it), the naive way, both on the same load. pozy-sync runs as deployed (ROLE=all,
 * built, the default RECONCILE_COALESCE_WINDOW_MS of 1 s), fed by the Pozy simulator's webhooks.
 *
 * The load: BENCH_FEED_CHANGES (default 600) changes in Pozy at BENCH_FEED_RATE a second (default 20): half of them
 * new scheduled posts, the others publishing (or, one in four, cancelling) one of the posts created in the last
 * second or so. Both consumers start from the mirror as it is before the load.
 *
 * Why the poller misses changes, without anything contrived: `updatedSince` compares Pozy's `updatedAt`, but a post
 * reaches the mirror later, and not in that order, whenever its read is later than a newer post's:
 * - reconcile coalescing: a post published within a second of its creation is read again only once the coalescing
 *   window has passed (up to 1 s), while posts Pozy changed meanwhile are read at once;
 * - a slow API with jitter: every answer takes BENCH_FEED_API_LATENCY_MS (default 50), and BENCH_FEED_API_SLOW_PER_MILLE
 *   of them (default 100) BENCH_FEED_API_SLOW_MS more (default 1000), as Pozy's API sometimes does.
 * When such a post lands, the poller has already seen a newer `updatedAt` and asks only for posts from then on: that
 * version of the post never appears in its answers (and when it was the post's last, the poller's copy stays stale).
 * A post changed twice between two polls also shows the poller only its second version.
 *
 * Figures, per consumer: changes written (post versions the mirror wrote during the load, from the `change` table),
 * changes a second delivered (distinct versions received over the time from the load's start to the last one
 * received), latency p50 / p99, and missed (versions written that it never received, by post id and `sequence`).
 * Latency is the same measure on both sides: the time a consumer first received a version, minus the write of that
 * version to the mirror, which is the `syncedAt` of the post in that version's feed entry (the write transaction's
 * time, on the database's clock; the feed entry keeps it as of the change, where GET /posts answers the newest read's).
 * Also: posts the poller ends stale on, and a catch-up consumer reading the whole feed from its start (limit 1000,
 * no wait), for the feed's rate when the load does not bound it.
 *
 * Beside the raw long-poll reader, on the same load and measured the same way: the client (`@pozy-sync/client`'s
 * followChanges, from ../packages/client/src, with a cursor store in memory, so what is measured is the client and
 * not a disk's fsync), as ratios against the raw reader (goal: within 10 %). And a named consumer (POST
 * /admin/consumers, made before the load so the load is its backlog) read after the load by BENCH_FEED_PARTITIONS
 * followChanges workers (default 4; `consumer`, `partition: k`, `partitions`) against the same shape with one
 * partition and one worker, each change costing its consumer BENCH_FEED_CONSUMER_COST_MS (default 5, an `await` in
 * onChange): changes a second from the workers' start until every partition has committed the load's last cursor, and
 * the ratio (goal: 4 partitions at least 3x one). At the load's 20 a second either would keep up; over a backlog,
 * the consumer's own cost is what bounds it, which is what partitions are for. The raw reader starts first, so it is
 * ahead of the client in the service's queue of waiting long polls: woken together, the second reader of the queue
 * is answered about a millisecond after the first (started the other way round, the raw reader is the one behind),
 * which the client's ratios carry; the line also gives the per-version gap.
 */
/* eslint-disable no-console -- a command-line report */
import { join } from 'node:path';
import { Pool } from 'pg';
import { createPozySyncClient, type CursorStore, followChanges, unwrap } from '../packages/client/src';
import { Rng } from '../simulator/faults';
import { PozySimulator } from '../simulator/simulator';
import { waitForHttp } from './net';
import { cell, intSetting, percentile, sleep, startBuiltService, stopProcess, withDatabase } from './processes';

const SECRET = 'whsec_bench';
const API_KEY = 'sk_bench';
const RATE_LIMIT_PER_MINUTE = 100_000;
const POLL_INTERVAL_MS = 1_000;
/** Lets the bench make named consumers (POST /admin/consumers); reads stay open, as no API_TOKENS is set. */
const ADMIN_TOKEN = 'bench_admin_token_feed_0123456789';

const settings = {
  changes: intSetting('BENCH_FEED_CHANGES', 600),
  rate: intSetting('BENCH_FEED_RATE', 20),
  apiLatencyMs: intSetting('BENCH_FEED_API_LATENCY_MS', 50, 0),
  apiSlowPerMille: intSetting('BENCH_FEED_API_SLOW_PER_MILLE', 100, 0),
  apiSlowMs: intSetting('BENCH_FEED_API_SLOW_MS', 1000, 0),
  partitions: intSetting('BENCH_FEED_PARTITIONS', 4),
  consumerCostMs: intSetting('BENCH_FEED_CONSUMER_COST_MS', 5, 0),
};

interface Post {
  id: string;
  sequence: number;
  pozyUpdatedAt: string;
  syncedAt: string;
}

interface FeedEntry {
  cursor: string;
  type: string;
  id: string;
  sequence: number;
  post?: Post;
}

/** What a consumer received: each version (`id:sequence`) with the time it first came. */
type Received = Map<string, number>;

const version = (id: string, sequence: number) => `${id}:${sequence}`;

async function getJson<T>(url: string, signal?: AbortSignal): Promise<T> {
  const response = await fetch(url, { signal });
  if (!response.ok) throw new Error(`GET ${url} answered ${response.status}: ${await response.text()}`);
  return (await response.json()) as T;
}

/** Follows the feed with long polls from `after` until stopped; records every post version and its write time. */
function followFeed(
  baseUrl: string,
  after: string,
): { received: Received; writtenAt: Map<string, number>; cursor: () => bigint; stop: () => Promise<void> } {
  const received: Received = new Map();
  const writtenAt = new Map<string, number>();
  const abort = new AbortController();
  let cursor = after;
  const running = (async () => {
    while (!abort.signal.aborted) {
      let page: { data: FeedEntry[]; nextCursor: string };
      try {
        page = await getJson(`${baseUrl}/changes?after=${cursor}&limit=1000&wait=25`, abort.signal);
      } catch (error) {
        if (abort.signal.aborted) return;
        throw error;
      }
      const at = Date.now();
      for (const entry of page.data) {
        if (!entry.post) continue;
        const key = version(entry.id, entry.sequence);
        if (!received.has(key)) received.set(key, at);
        writtenAt.set(key, Date.parse(entry.post.syncedAt));
      }
      cursor = page.nextCursor;
    }
  })();
  return {
    received,
    writtenAt,
    cursor: () => BigInt(cursor),
    stop: async () => {
      abort.abort();
      await running;
    },
  };
}

/**
 * Follows the feed with the client, followChanges with a cursor store in memory, from `after` until stopped; records
 * every post version as onChange is handed it.
 */
function followWithClient(baseUrl: string, after: string): { received: Received; cursor: () => bigint; stop: () => Promise<void> } {
  const received: Received = new Map();
  const abort = new AbortController();
  let cursor = after;
  const store: CursorStore = {
    load: () => Promise.resolve(cursor),
    save: (next) => {
      cursor = next;
      return Promise.resolve();
    },
  };
  const running = followChanges({
    client: createPozySyncClient({ baseUrl }),
    cursorStore: store,
    waitSeconds: 25,
    limit: 1000,
    signal: abort.signal,
    onChange: (change) => {
      if (!change.post) return;
      const key = version(change.id, change.sequence);
      if (!received.has(key)) received.set(key, Date.now());
    },
  });
  return {
    received,
    cursor: () => BigInt(cursor),
    stop: async () => {
      abort.abort();
      await running;
    },
  };
}

interface ConsumerRun {
  partitions: number;
  handled: number;
  /** Changes handled by each partition's worker. */
  byPartition: number[];
  seconds: number;
  perSecond: number;
}

/**
 * Reads the named consumer `name` (made with `partitions`) with one followChanges worker per partition, each change
 * costing `costMs`, from the workers' start until every partition has committed a cursor at or past `end`.
 */
async function drainConsumer(baseUrl: string, name: string, partitions: number, end: string, costMs: number): Promise<ConsumerRun> {
  const client = createPozySyncClient({ baseUrl });
  const abort = new AbortController();
  const byPartition = new Array<number>(partitions).fill(0);
  const done = new Set<number>();
  let doneAt = 0;
  const startedAt = Date.now();
  const workers = byPartition.map((_, partition) =>
    followChanges({
      client,
      consumer: name,
      partition,
      partitions,
      // Made before the load, the consumer's backlog is the load; the mirror before it is not what is measured.
      bootstrap: false,
      waitSeconds: 25,
      limit: 1000,
      signal: abort.signal,
      onChange: async () => {
        await sleep(costMs);
        byPartition[partition] += 1;
      },
      onEvent: (event) => {
        if (event.kind !== 'page' || BigInt(event.cursor) < BigInt(end) || done.has(partition)) return;
        done.add(partition);
        if (done.size === partitions) doneAt = Date.now();
      },
    }),
  );
  const failed = Promise.all(workers).then(() => {
    throw new Error(`bench: consumer ${name}'s workers stopped before the end`);
  });
  await Promise.race([failed, waitUntil(`consumer ${name} to commit ${end}`, () => done.size === partitions)]);
  abort.abort();
  await Promise.all(workers);
  const handled = byPartition.reduce((a, b) => a + b, 0);
  const seconds = (doneAt - startedAt) / 1000;
  return { partitions, handled, byPartition, seconds, perSecond: handled / seconds };
}

/** Polls GET /posts?updatedSince= every second, paging through each answer; records every post version it sees. */
function pollPosts(baseUrl: string): { received: Received; newest: Map<string, number>; polls: () => number; stop: () => Promise<void> } {
  const received: Received = new Map();
  /** Per post, the highest sequence seen: its copy. */
  const newest = new Map<string, number>();
  let since: string | undefined;
  let polls = 0;
  let stopped = false;
  const poll = async () => {
    let cursor: string | null = null;
    let newestSeen = since;
    do {
      const query = new URLSearchParams({ includeDeleted: 'true', limit: '500' });
      if (since !== undefined) query.set('updatedSince', since);
      if (cursor !== null) query.set('cursor', cursor);
      const page = await getJson<{ data: Post[]; nextCursor: string | null }>(`${baseUrl}/posts?${query.toString()}`);
      const at = Date.now();
      for (const post of page.data) {
        const key = version(post.id, post.sequence);
        if (!received.has(key)) received.set(key, at);
        newest.set(post.id, Math.max(newest.get(post.id) ?? 0, post.sequence));
        if (newestSeen === undefined || Date.parse(post.pozyUpdatedAt) > Date.parse(newestSeen)) newestSeen = post.pozyUpdatedAt;
      }
      cursor = page.nextCursor;
    } while (cursor !== null);
    since = newestSeen;
    polls += 1;
  };
  const running = (async () => {
    for (let next = Date.now(); !stopped;) {
      await poll();
      next += POLL_INTERVAL_MS;
      await sleep(Math.max(0, next - Date.now()));
    }
  })();
  return {
    received,
    newest,
    polls: () => polls,
    stop: async () => {
      stopped = true;
      await running;
    },
  };
}

async function waitUntil(what: string, check: () => Promise<boolean> | boolean, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`bench: timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** Reads owed to the mirror: pending reconcile requests and queued jobs. */
async function backlog(db: Pool): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `SELECT (SELECT count(*) FROM reconcile_request WHERE due_at IS NOT NULL) + (SELECT count(*) FROM graphile_worker._private_jobs) AS n`,
  );
  return Number(rows[0].n);
}

interface Figures {
  name: string;
  perSecond: number;
  p50: number;
  p99: number;
  missed: number;
}

export async function runFeedScenario(serverUrl: string): Promise<void> {
  const { changes, rate, apiLatencyMs, apiSlowPerMille, apiSlowMs, partitions, consumerCostMs } = settings;
  console.log(
    `feed: ${changes} changes in Pozy at ${rate}/s (half new posts, half publishing or cancelling a post a second old), ` +
      `Pozy API ${apiLatencyMs} ms with ${apiSlowPerMille / 10}% of answers ${apiSlowMs} ms later, reconcile coalescing 1 s; ` +
      `GET /changes?wait=25 beside GET /posts?updatedSince= every second, the client (followChanges), ` +
      `and a named consumer's backlog at ${consumerCostMs} ms a change, ${partitions} partitions against 1`,
  );
  const sim = await PozySimulator.start({
    apiKey: API_KEY,
    seed: 44,
    rateLimitPerMinute: RATE_LIMIT_PER_MINUTE,
    faults: { apiLatencyMs, apiSlowRate: apiSlowPerMille / 1000, apiSlowMs },
    webhook: { url: 'http://127.0.0.1:9/', secret: SECRET },
  });
  try {
    await withDatabase(serverUrl, 'pozy_bench_feed', async (databaseUrl) => {
      const { child, url: serviceUrl } = await startBuiltService(
        databaseUrl,
        { url: sim.url, apiKey: API_KEY, webhookSecret: SECRET, ratePerMinute: RATE_LIMIT_PER_MINUTE },
        { SPOOL_DIR: join('.data', 'bench-spool'), ADMIN_TOKEN },
      );
      const db = new Pool({ connectionString: databaseUrl, max: 4 });
      try {
        await waitForHttp(`${serviceUrl}/health/ready`, 60_000);
        sim.setWebhookUrl(`${serviceUrl}/webhooks/pozy`);
        const world = sim.world;
        const profile = world.createProfile('Bench feed');
        const accounts = [world.connectAccount(profile._id, 'linkedin', 'bench.feed'), world.connectAccount(profile._id, 'twitter', 'bench_feed')];
        const accountIds = accounts.map((a) => a._id);
        const settle = async () => {
          await sim.idle();
          await waitUntil('the mirror to settle', async () => (await backlog(db)) === 0);
          await waitUntil(
            'every change to be placed',
            async () => (await db.query('SELECT 1 FROM change WHERE position IS NULL LIMIT 1')).rowCount === 0,
          );
        };
        await waitUntil('the accounts to be mirrored', async () => (await db.query('SELECT 1 FROM account')).rowCount === accounts.length);
        await settle();
        // The named consumers start at the head as of now (the mirror is settled): the load is their backlog.
        const admin = createPozySyncClient({ baseUrl: serviceUrl, token: ADMIN_TOKEN });
        const consumerShapes = [
          { name: 'bench-one', partitions: 1 },
          { name: `bench-${partitions}`, partitions },
        ];
        for (const body of consumerShapes) await unwrap(admin.POST('/admin/consumers', { body }));
        const { cursor: start } = await getJson<{ cursor: string }>(`${serviceUrl}/changes/head`);

        const feed = followFeed(serviceUrl, start);
        const viaClient = followWithClient(serviceUrl, start);
        const poller = pollPosts(serviceUrl);
        await waitUntil('the first poll', () => poller.polls() > 0);

        // The load: steady, seeded.
        process.stdout.write('  load');
        const rng = new Rng(44);
        const recent: string[] = [];
        let created = 0;
        const loadStart = Date.now();
        for (let i = 0; i < changes; i++) {
          await sleep(Math.max(0, loadStart + (i * 1000) / rate - Date.now()));
          if (recent.length === 0 || rng.chance(0.5)) {
            const post = world.createPost({ content: `bench feed ${created++}`, accountIds, scheduledFor: Date.now() + 3_600_000 });
            recent.push(post._id);
            // About a second's worth of posts: a change to one of them falls in its coalescing window.
            if (recent.length > rate / 2) recent.shift();
          } else {
            const postId = recent.splice(rng.int(recent.length), 1)[0];
            if (rng.chance(0.25)) world.cancelPost(postId);
            else world.publishPost(postId, {}, rng);
          }
        }
        process.stdout.write(', settling');
        await settle();
        const { cursor: end } = await getJson<{ cursor: string }>(`${serviceUrl}/changes/head`);
        await waitUntil('the feed consumer to reach the head', () => feed.cursor() >= BigInt(end));
        await waitUntil('the client to reach the head', () => viaClient.cursor() >= BigInt(end));
        // Two more polls, so the poller has had every chance to see the last writes.
        const pollsAtEnd = poller.polls();
        await waitUntil('two more polls', () => poller.polls() >= pollsAtEnd + 2);
        await poller.stop();
        await feed.stop();
        await viaClient.stop();

        const { rows: written } = await db.query<{ resource_id: string; sequence: number }>(
          `SELECT resource_id, sequence FROM change WHERE position > $1 AND position <= $2 AND type LIKE 'post.%'`,
          [start, end],
        );
        const { rows: finals } = await db.query<{ id: string; sequence: number }>('SELECT id, sequence FROM post');
        const writtenKeys = written.map((r) => version(r.resource_id, r.sequence));
        const figures = (name: string, received: Received): Figures => {
          const seen = writtenKeys.filter((key) => received.has(key));
          const lags = seen.flatMap((key) => {
            const at = feed.writtenAt.get(key);
            return at === undefined ? [] : [received.get(key)! - at];
          });
          const lastAt = Math.max(...seen.map((key) => received.get(key)!));
          return {
            name,
            perSecond: (seen.length * 1000) / (lastAt - loadStart),
            p50: percentile(lags, 50),
            p99: percentile(lags, 99),
            missed: writtenKeys.length - seen.length,
          };
        };
        const stale = finals.filter((post) => (poller.newest.get(post.id) ?? 0) < post.sequence).length;

        // Catch-up: the whole feed from its start, as fast as it answers.
        process.stdout.write(', catch-up');
        const total = Number(end);
        const catchUpStart = Date.now();
        let after = '0';
        let read = 0;
        let pages = 0;
        while (BigInt(after) < BigInt(end)) {
          pages += 1;
          const page = await getJson<{ data: FeedEntry[]; nextCursor: string }>(`${serviceUrl}/changes?after=${after}&limit=1000`);
          read += page.data.length;
          after = page.nextCursor;
        }
        const catchUpPerSecond = (read * 1000) / (Date.now() - catchUpStart);

        // The named consumers' backlog: the load's entries, one partition first, then the partitioned one.
        process.stdout.write(', consumers');
        const { rows: backlogRows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM change WHERE position > $1 AND position <= $2', [
          start,
          end,
        ]);
        const runs: ConsumerRun[] = [];
        for (const shape of consumerShapes) runs.push(await drainConsumer(serviceUrl, shape.name, shape.partitions, end, consumerCostMs));
        console.log(' done');

        report(
          writtenKeys.length,
          [
            figures('feed (GET /changes?wait=25)', feed.received),
            figures('poller (GET /posts?updatedSince=, 1 s)', poller.received),
            figures('client (followChanges, cursor in memory)', viaClient.received),
          ],
          behind(writtenKeys, viaClient.received, feed.received),
        );
        console.log(`  posts the poller ends stale on (their last version never seen): ${stale} of ${finals.length}`);
        console.log(
          `  catch-up: the whole feed (${total} entries) read from its start in ${pages} page(s) of up to 1000 at ${cell(catchUpPerSecond, 0, 0)} changes/s`,
        );
        reportConsumers(backlogRows[0].n, consumerCostMs, runs);
      } finally {
        await db.end();
        await stopProcess(child);
      }
    });
  } finally {
    await sim.stop();
  }
}

const ratio = (a: number, b: number) => (b === 0 ? (a === 0 ? '1.00x' : 'never') : `${(a / b).toFixed(2)}x`);

const row = (written: number, f: Figures) =>
  `  ${f.name.padEnd(40)}${cell(written, 0, 9)}${cell(f.perSecond, 1, 11)}${cell(f.p50, 0, 22)}${cell(f.p99)}${cell(f.missed, 0, 9)}`;

/** Per version both received, how much later `later` received it than `first` did, in ms: the client's own cost. */
function behind(keys: readonly string[], later: Received, first: Received): number[] {
  return keys.flatMap((key) => {
    const [a, b] = [later.get(key), first.get(key)];
    return a === undefined || b === undefined ? [] : [a - b];
  });
}

function report(written: number, [feed, poller, client]: Figures[], clientBehind: number[]): void {
  console.log('');
  console.log(
    `  ${'consumer'.padEnd(40)}${'written'.padStart(9)}${'changes/s'.padStart(11)}${'write→receipt p50 ms'.padStart(22)}${'p99 ms'.padStart(10)}${'missed'.padStart(9)}`,
  );
  for (const f of [feed, poller, client]) console.log(row(written, f));
  console.log(
    `  feed vs poller: changes/s ${ratio(feed.perSecond, poller.perSecond)}, p50 ${ratio(feed.p50, poller.p50)}, ` +
      `p99 ${ratio(feed.p99, poller.p99)}; missed ${feed.missed} vs ${poller.missed} ` +
      `(${((100 * poller.missed) / Math.max(1, written)).toFixed(1)}% of the changes written)`,
  );
  console.log(
    `  client vs feed: changes/s ${ratio(client.perSecond, feed.perSecond)}, p50 ${ratio(client.p50, feed.p50)}, ` +
      `p99 ${ratio(client.p99, feed.p99)}; missed ${client.missed} vs ${feed.missed} (goal: within 10 % of the raw reader); ` +
      `per version, the client's receipt after the raw reader's: p50 ${cell(percentile(clientBehind, 50), 0, 0)} ms, ` +
      `p99 ${cell(percentile(clientBehind, 99), 0, 0)} ms`,
  );
}

/** The named consumer's backlog read by each shape, and the partitioned one's ratio to one partition (goal: at least 3x). */
function reportConsumers(backlog: number, costMs: number, runs: ConsumerRun[]): void {
  console.log('');
  console.log(`  named consumer, the load's ${backlog} entries as its backlog, ${costMs} ms a change in onChange (followChanges workers):`);
  console.log(`  ${'partitions'.padEnd(40)}${'handled'.padStart(9)}${'changes/s'.padStart(11)}${'seconds'.padStart(10)}  per partition`);
  for (const run of runs) {
    const name = `${run.partitions} partition${run.partitions === 1 ? '' : 's'}, ${run.partitions} worker${run.partitions === 1 ? '' : 's'}`;
    console.log(`  ${name.padEnd(40)}${cell(run.handled, 0, 9)}${cell(run.perSecond, 1, 11)}${cell(run.seconds, 2)}  ${run.byPartition.join(' / ')}`);
  }
  const [one, many] = runs;
  const largest = Math.max(...many.byPartition);
  console.log(
    `  ${many.partitions} partitions vs 1: changes/s ${ratio(many.perSecond, one.perSecond)} (goal: at least 3x; ` +
      `the partitions' spread, the largest ${largest} of ${many.handled}, allows at most ${ratio(many.handled, largest)}; ` +
      `one worker's bound at ${costMs} ms a change: ${costMs === 0 ? 'none' : (1000 / costMs).toFixed(0)} a second)`,
  );
}
