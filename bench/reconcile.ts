/**
 * The reconcile scenario of npm run bench: a burst of events over few posts (issue: 1,000 events over 50 posts in
 * one second, Pozy API latency 50 ms). Per round it counts the Pozy API calls per distinct post, and measures the
 * time from the last event until the mirror equals the truth, for pozy-sync (ROLE=all) and for a naive receiver
 * that reads the post once per event and UPSERTs it (naive-receiver.ts), side by side.
 *
 * The Pozy simulator runs in the bench process with no webhook subscription: the bench changes the world and
 * sends the signed events itself, so it knows when each was sent. By default each event is sent right after the
 * change it announces (as Pozy does), so a post's truth is final once its last event has been sent; with
 * BENCH_RECONCILE_MUTATE=before, every post is changed once before the burst and all events find the final truth.
 * The mirror is "equal to the truth" when `post.pozy_updated_at` equals the world's `updatedAt` for every post.
 *
 *   BENCH_RECONCILE_ROUNDS (default 5), BENCH_RECONCILE_WARMUP_ROUNDS (default 1), BENCH_RECONCILE_POSTS (50),
 *   BENCH_RECONCILE_EVENTS (1000), BENCH_RECONCILE_BURST_MS (1000), BENCH_API_LATENCY_MS (50),
 *   BENCH_RECONCILE_DEADLINE_MS (after the last event; default 5000), BENCH_RECONCILE_MUTATE (interleaved | before),
 *   BENCH_API_SLOW_PER_MILLE and BENCH_API_SLOW_MS (default 0 and 200: that many per mille of API answers are held
 *   that much longer on the way back, after the simulator read its world, by slow-return-proxy.ts: out-of-order reads);
 *   RECONCILE_COALESCE_WINDOW_MS, WORKER_CONCURRENCY and DATABASE_POOL_SIZE, when set, are passed to pozy-sync.
 */
/* eslint-disable no-console -- a command-line report */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Client } from 'pg';
import { Pool as HttpPool } from 'undici';
import { PozySimulator } from '../simulator/simulator';
import { PozyWorld } from '../simulator/world';
import { signPozyPayload } from '../src/webhooks/webhook-signature';
import { freePort, waitForHttp } from './net';
import { BUILT_SERVICE, cell, intSetting, median, percentile, sleep, startProcess, stopProcess, withDatabase } from './processes';
import { startSlowReturnProxy } from './slow-return-proxy';

const SECRET = 'whsec_bench';
const API_KEY = 'sk_bench';
/** The simulator's limit and pozy-sync's budget: high, so the scenario measures coalescing, not throttling. */
const RATE_LIMIT_PER_MINUTE = 100_000;
const POLL_MS = 10;
/** A mirror that does not match while nothing is left to change it, for this long, has ended stale. */
const STUCK_IDLE_MS = 500;
const GET_POST_ROUTE = 'GET /v1/posts/:postId';
const EVENT_TYPES = ['post.platform.published', 'post.published', 'post.scheduled', 'post.platform.failed'] as const;

const settings = {
  rounds: Math.max(1, intSetting('BENCH_RECONCILE_ROUNDS', 5, 0)),
  warmupRounds: intSetting('BENCH_RECONCILE_WARMUP_ROUNDS', 1, 0),
  posts: Math.max(1, intSetting('BENCH_RECONCILE_POSTS', 50, 0)),
  events: Math.max(1, intSetting('BENCH_RECONCILE_EVENTS', 1000, 0)),
  burstMs: intSetting('BENCH_RECONCILE_BURST_MS', 1000, 0),
  apiLatencyMs: intSetting('BENCH_API_LATENCY_MS', 50, 0),
  /** Per mille of API answers held apiSlowMs more after Pozy read its state (default none): reads finish out of order. */
  apiSlowPerMille: intSetting('BENCH_API_SLOW_PER_MILLE', 0, 0),
  apiSlowMs: intSetting('BENCH_API_SLOW_MS', 200, 0),
  deadlineMs: intSetting('BENCH_RECONCILE_DEADLINE_MS', 5000, 0),
  mutate: process.env.BENCH_RECONCILE_MUTATE === 'before' ? ('before' as const) : ('interleaved' as const),
  coalesceWindowMs: process.env.RECONCILE_COALESCE_WINDOW_MS ? intSetting('RECONCILE_COALESCE_WINDOW_MS', 1000, 0) : undefined,
};

/** The service's own settings the bench forwards when set, to try them under this load. */
const SERVICE_PASS_THROUGH = ['RECONCILE_COALESCE_WINDOW_MS', 'WORKER_CONCURRENCY', 'DATABASE_POOL_SIZE'];

function passedThrough(names: readonly string[]): Record<string, string> {
  return Object.fromEntries(names.flatMap((name) => (process.env[name] ? [[name, process.env[name]]] : [])));
}

/** One receiver under test. */
interface System {
  name: string;
  script: string;
  env: Record<string, string>;
  /** True when nothing is left that could still change its mirror (every answered event fully processed). */
  idle: (db: Client) => Promise<boolean>;
}

interface Round {
  /** GET /v1/posts/:postId calls during the round, and per distinct post. */
  calls: number;
  callsPerPost: number;
  /** API answers other than 200 during the round. */
  apiNon200: number;
  /** Events answered other than 2xx, or not at all. */
  sendErrors: number;
  eventsPerS: number;
  /** From the last event sent until it was answered. */
  lastAnswerMs: number;
  /** From the last event sent until every post equalled the truth (and stayed so); Infinity if never. */
  convergeMs: number;
  /** Per post: from its own last event sent until its row equalled the truth (for converged posts). */
  perPostMs: number[];
  /** Posts that did not equal the truth at the end (deadline, or idle with a stale row). */
  stalePosts: number;
  /** Times a row that equalled the final truth was later overwritten with an older state. */
  rollbacks: number;
}

interface Measured {
  name: string;
  rounds: Round[];
}

// ---- the world ----

/** Two profiles with three accounts each, and `posts` scheduled posts on one to three of them. */
function seedWorld(world: PozyWorld, posts: number): string[] {
  const platforms = ['linkedin', 'twitter', 'instagram'];
  const profiles = ['Bench Brand A', 'Bench Brand B'].map((name) => world.createProfile(name));
  const accounts = profiles.map((profile, i) =>
    platforms.map((platform) => world.connectAccount(profile._id, platform, `bench${i}.${platform}`)._id),
  );
  const ids: string[] = [];
  for (let i = 0; i < posts; i++) {
    const post = world.createPost({
      content: `Bench post ${i}`,
      accountIds: accounts[i % accounts.length].slice(0, 1 + (i % platforms.length)),
      scheduledFor: Date.now() + 3_600_000 * (1 + i),
    });
    ids.push(post._id);
  }
  return ids;
}

const versionOf = (world: PozyWorld, postId: string) => Date.parse(world.getPost(postId)!.updatedAt);

function getPostCalls(sim: PozySimulator): { total: number; non200: number } {
  const byStatus = sim.stats().api.byRoute[GET_POST_ROUTE] ?? {};
  const total = Object.values(byStatus).reduce((sum, n) => sum + n, 0);
  return { total, non200: total - (byStatus['200'] ?? 0) };
}

// ---- one round ----

function signedEvent(postId: string, n: number): { body: string; headers: Record<string, string> } {
  const id = randomUUID();
  const type = EVENT_TYPES[n % EVENT_TYPES.length];
  const body = JSON.stringify({ id, event: type, timestamp: new Date().toISOString(), post: { id: postId } });
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'x-pozy-event': type,
      'x-pozy-event-id': id,
      'x-pozy-delivery-id': randomUUID(),
      'x-pozy-attempt': '1',
      'x-pozy-signature': signPozyPayload(SECRET, body),
    },
  };
}

async function mirrorVersions(db: Client, postIds: string[]): Promise<Map<string, number>> {
  const { rows } = await db.query<{ id: string; v: string | null }>(
    'SELECT id, (extract(epoch FROM pozy_updated_at) * 1000)::bigint::text AS v FROM post WHERE id = ANY($1)',
    [postIds],
  );
  return new Map(rows.filter((r) => r.v !== null).map((r) => [r.id, Number(r.v)]));
}

async function runRound(round: number, sim: PozySimulator, postIds: string[], http: HttpPool, db: Client, system: System): Promise<Round> {
  const world = sim.world;
  const n = settings.events;
  const postOf = (k: number) => postIds[k % postIds.length];
  const lastEventOf = new Map<string, number>();
  for (let k = 0; k < n; k++) lastEventOf.set(postOf(k), k);
  const active = [...lastEventOf.keys()];

  /** Per post: the world's updatedAt once its last change of the round is made. */
  const finalVersion = new Map<string, number>();
  let edits = 0;
  const edit = (postId: string) => {
    edits += 1;
    world.editPost(postId, { content: `Round ${round}, edit ${edits}: ${postId.slice(-6)}` });
  };
  if (settings.mutate === 'before') {
    for (const postId of active) {
      edit(postId);
      finalVersion.set(postId, versionOf(world, postId));
    }
  }

  const callsBefore = getPostCalls(sim);
  const sentAt = new Array<number>(n).fill(NaN);
  let lastAnsweredAt = 0;
  let sendErrors = 0;
  let sending = true;

  // The poller: every POLL_MS, which posts equal their final truth; ends when the mirror can no longer change.
  const matchedAt = new Map<string, number>();
  let rollbacks = 0;
  const poller = (async () => {
    let idleSince: number | undefined;
    for (;;) {
      const versions = await mirrorVersions(db, active);
      const now = performance.now();
      for (const postId of active) {
        const target = finalVersion.get(postId);
        if (target === undefined) continue;
        if (versions.get(postId) === target) {
          if (!matchedAt.has(postId)) matchedAt.set(postId, now);
        } else if (matchedAt.delete(postId)) {
          rollbacks += 1;
        }
      }
      if (!sending) {
        const allMatched = matchedAt.size === active.length;
        const idle = await system.idle(db);
        if (idle && allMatched) return;
        idleSince = idle ? (idleSince ?? now) : undefined;
        if (idleSince !== undefined && now - idleSince >= STUCK_IDLE_MS) return;
        if (now - sentAt[n - 1] > settings.deadlineMs) return;
      }
      await sleep(POLL_MS);
    }
  })();
  // Awaited after the burst; until then a failed poll must not surface as an unhandled rejection.
  poller.catch(() => undefined);

  const answers: Promise<void>[] = [];
  const t0 = performance.now();
  for (let k = 0; k < n; k++) {
    const wait = t0 + (k * settings.burstMs) / n - performance.now();
    if (wait >= 1) await sleep(wait);
    const postId = postOf(k);
    if (settings.mutate === 'interleaved') {
      edit(postId);
      if (lastEventOf.get(postId) === k) finalVersion.set(postId, versionOf(world, postId));
    }
    const { body, headers } = signedEvent(postId, k);
    sentAt[k] = performance.now();
    answers.push(
      http.request({ method: 'POST', path: '/webhooks/pozy', headers, body }).then(
        async (response) => {
          await response.body.dump();
          if (response.statusCode < 200 || response.statusCode >= 300) sendErrors += 1;
          lastAnsweredAt = Math.max(lastAnsweredAt, performance.now());
        },
        () => {
          sendErrors += 1;
        },
      ),
    );
  }
  await Promise.all(answers);
  sending = false;
  await poller;

  const callsAfter = getPostCalls(sim);
  const lastSent = sentAt[n - 1];
  const calls = callsAfter.total - callsBefore.total;
  const perPostMs = [...matchedAt].map(([postId, at]) => Math.max(0, at - sentAt[lastEventOf.get(postId)!]));
  const stalePosts = active.length - matchedAt.size;
  return {
    calls,
    callsPerPost: calls / active.length,
    apiNon200: callsAfter.non200 - callsBefore.non200,
    sendErrors,
    eventsPerS: (n / (Math.max(lastAnsweredAt, lastSent) - t0)) * 1000,
    lastAnswerMs: Math.max(0, lastAnsweredAt - lastSent),
    convergeMs: stalePosts > 0 ? Infinity : Math.max(0, Math.max(...matchedAt.values()) - lastSent),
    perPostMs,
    stalePosts,
    rollbacks,
  };
}

// ---- one system ----

async function measure(system: System, sim: PozySimulator, postIds: string[], databaseUrl: string): Promise<Measured> {
  const port = await freePort();
  const child = startProcess(system.script, { ...system.env, DATABASE_URL: databaseUrl, PORT: String(port) });
  const url = `http://127.0.0.1:${port}`;
  const http = new HttpPool(url, { connections: 256 });
  const db = new Client({ connectionString: databaseUrl });
  try {
    await waitForHttp(`${url}/health/ready`, 60_000);
    await db.connect();
    const total = settings.warmupRounds + settings.rounds;
    process.stdout.write(`  ${system.name}: ${settings.warmupRounds} warm-up + ${settings.rounds} rounds `);
    const rounds: Round[] = [];
    for (let r = 0; r < total; r++) {
      // A quiet gap longer than pozy-sync's coalescing window, so each round starts like the first.
      if (r > 0) await sleep((settings.coalesceWindowMs ?? 1000) + 100);
      const round = await runRound(r, sim, postIds, http, db, system);
      process.stdout.write(r < settings.warmupRounds ? 'w' : round.stalePosts > 0 ? 'x' : '.');
      if (r >= settings.warmupRounds) rounds.push(round);
    }
    console.log(' done');
    return { name: system.name, rounds };
  } finally {
    await http.close();
    await db.end().catch(() => undefined);
    await stopProcess(child);
  }
}

/** pozy-sync is idle when no reconcile request is pending and no job is queued or running. */
async function serviceIdle(db: Client): Promise<boolean> {
  const { rows } = await db.query<{ n: string }>(
    'SELECT (SELECT count(*) FROM reconcile_request WHERE due_at IS NOT NULL) + (SELECT count(*) FROM graphile_worker._private_jobs) AS n',
  );
  return Number(rows[0].n) === 0;
}

// ---- report ----

interface Figures {
  eventsPerS: number;
  callsPerPost: number;
  callsPerPostMax: number;
  lastAnswerMs: number;
  convergeP50: number;
  convergeP99: number;
  perPostP50: number;
  perPostP99: number;
}

function figures(m: Measured): Figures {
  const rounds = m.rounds;
  const perPost = rounds.flatMap((r) => r.perPostMs);
  return {
    eventsPerS: median(rounds.map((r) => r.eventsPerS)),
    callsPerPost: median(rounds.map((r) => r.callsPerPost)),
    callsPerPostMax: Math.max(...rounds.map((r) => r.callsPerPost)),
    lastAnswerMs: median(rounds.map((r) => r.lastAnswerMs)),
    convergeP50: percentile(
      rounds.map((r) => r.convergeMs),
      50,
    ),
    convergeP99: percentile(
      rounds.map((r) => r.convergeMs),
      99,
    ),
    perPostP50: percentile(perPost, 50),
    perPostP99: percentile(perPost, 99),
  };
}

function report(service: Measured, naive: Measured): void {
  const columns: [keyof Figures, string, number][] = [
    ['eventsPerS', 'events/s', 0],
    ['callsPerPost', 'calls/post', 2],
    ['callsPerPostMax', 'max', 2],
    ['lastAnswerMs', 'answer ms', 1],
    ['convergeP50', 'conv p50', 1],
    ['convergeP99', 'conv p99', 1],
    ['perPostP50', 'post p50', 1],
    ['perPostP99', 'post p99', 1],
  ];
  const rows = [service, naive].map((m) => ({ m, f: figures(m) }));
  console.log('');
  console.log(
    `Reconcile: ${settings.events} events over ${settings.posts} posts in ${settings.burstMs} ms per round, ${settings.rounds} rounds ` +
      `(+${settings.warmupRounds} warm-up), Pozy API latency ${settings.apiLatencyMs} ms` +
      (settings.apiSlowPerMille > 0 ? ` (+${settings.apiSlowMs} ms after the read for ${settings.apiSlowPerMille / 10}% of answers)` : '') +
      `, changes ${settings.mutate === 'before' ? 'made before the burst (so the mirror usually equals the truth before the last event: 0 ms)' : 'interleaved with their events'}`,
  );
  console.log('  calls/post: GET /v1/posts/:postId per distinct post (median round; max: worst round); answer ms: last event sent -> answered;');
  console.log(
    "  conv: last event sent -> every post equals the truth (over rounds); post: a post's last event sent -> its row equals the truth (all posts, all rounds)",
  );
  console.log(`${'receiver'.padEnd(34)}${columns.map(([, h]) => h.padStart(11)).join('')}${'stale'.padStart(8)}${'errors'.padStart(8)}`);
  for (const { m, f } of rows) {
    const stale = m.rounds.filter((r) => r.stalePosts > 0).length;
    const errors = m.rounds.reduce((sum, r) => sum + r.sendErrors + r.apiNon200, 0);
    console.log(
      `${m.name.padEnd(34)}${columns.map(([key, , digits]) => cell(f[key], digits, 11)).join('')}${cell(stale, 0, 8)}${cell(errors, 0, 8)}`,
    );
  }
  const [s, b] = rows.map((r) => r.f);
  const ratio = (key: keyof Figures) => {
    const value = s[key] / b[key];
    return (Number.isFinite(s[key]) && Number.isFinite(b[key]) && Number.isFinite(value) ? `${value.toFixed(2)}x` : '-').padStart(11);
  };
  console.log(`${'pozy-sync / naive'.padEnd(34)}${columns.map(([key]) => ratio(key)).join('')}`);
  console.log('');
  console.log(
    `${service.name}: ${s.callsPerPost.toFixed(2)} API calls per distinct post (goal <= 2: ${s.callsPerPostMax <= 2 ? 'met in every round' : 'NOT MET in some round'}), ` +
      `${b.callsPerPost.toFixed(2)} for the naive receiver; converged ${s.convergeP50.toFixed(0)} ms (p50) / ${s.convergeP99.toFixed(0)} ms (p99) after the last event`,
  );
  for (const { m } of rows) {
    const stale = m.rounds.filter((r) => r.stalePosts > 0);
    const rollbacks = m.rounds.reduce((sum, r) => sum + r.rollbacks, 0);
    const errors = m.rounds.reduce((sum, r) => sum + r.sendErrors, 0);
    const apiErrors = m.rounds.reduce((sum, r) => sum + r.apiNon200, 0);
    console.log(
      `  ${m.name}: ${stale.length === 0 ? 'every round converged' : `${stale.length} of ${m.rounds.length} rounds ended with stale rows (${stale.reduce((sum, r) => sum + r.stalePosts, 0)} posts; deadline ${settings.deadlineMs} ms)`}` +
        `; ${rollbacks} row(s) rolled back to an older state after matching the truth; ${errors} event(s) not answered 2xx; ${apiErrors} API answer(s) not 200`,
    );
  }
}

// ---- the scenario ----

/** Runs the reconcile scenario on databases of `serverUrl` and prints its table. */
export async function runReconcileScenario(serverUrl: string): Promise<void> {
  const sim = await PozySimulator.start({
    apiKey: API_KEY,
    seed: 42,
    faults: { apiLatencyMs: settings.apiLatencyMs },
    rateLimitPerMinute: RATE_LIMIT_PER_MINUTE,
  });
  const proxy =
    settings.apiSlowPerMille > 0
      ? await startSlowReturnProxy(sim.url, { rate: Math.min(1, settings.apiSlowPerMille / 1000), delayMs: settings.apiSlowMs, seed: 42 })
      : undefined;
  try {
    const postIds = seedWorld(sim.world, settings.posts);
    const pozyEnv = { POZY_API_URL: proxy?.url ?? sim.url, POZY_API_KEY: API_KEY };
    const service: System = {
      name: 'pozy-sync (ROLE=all)',
      script: BUILT_SERVICE,
      env: {
        ...pozyEnv,
        POZY_WEBHOOK_SECRET: SECRET,
        POZY_RATE_LIMIT_PER_MINUTE: String(RATE_LIMIT_PER_MINUTE),
        HOST: '127.0.0.1',
        LOG_LEVEL: 'warn',
        ROLE: 'all',
        ...passedThrough(SERVICE_PASS_THROUGH),
      },
      idle: serviceIdle,
    };
    const naive: System = {
      name: 'naive (fetch + UPSERT per event)',
      script: join(__dirname, 'naive-receiver.js'),
      env: pozyEnv,
      // It answers each event after its write, so once every event is answered nothing can change its mirror.
      idle: async () => true,
    };
    const measuredService = await withDatabase(serverUrl, 'pozy_bench_reconcile', (url) => measure(service, sim, postIds, url));
    const measuredNaive = await withDatabase(serverUrl, 'pozy_bench_naive', (url) => measure(naive, sim, postIds, url));
    report(measuredService, measuredNaive);
  } finally {
    await proxy?.close();
    await sim.stop();
  }
}
