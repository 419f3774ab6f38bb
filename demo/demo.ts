/**
 * npm run demo: pozy-sync's main job, end to end on this machine. It starts an embedded PostgreSQL, the Pozy
 * simulator (a workspace that already holds a few thousand posts, then a realistic stream of changes, with mild
 * faults: duplicate, reordered and dropped deliveries, API 5xx, 429 and slow answers) and the built service pointed
 * at both; shows the import of the existing workspace, then the changes; runs a backfill to recover what was
 * dropped; and ends with a summary and whether every mirrored row equals the truth.
 *
 * Beside the environment's workspace, it connects DEMO_WORKSPACES more (default 3, each a Pozy key of its own with
 * DEMO_WORKSPACE_POSTS existing posts, default 1000) through POST /admin/workspaces with managed webhooks (PUBLIC_URL
 * is the service's own address here), shows each import, changes them all, and checks every workspace's mirror.
 *
 *   DEMO_STEPS (default 400 changes), DEMO_EXISTING_POSTS (default 5000), DEMO_EXISTING_ACCOUNTS (default 40),
 *   DEMO_SEED (default: random), DEMO_PORT (service, default 3000), EMBEDDED_DATABASE_PORT (default 54329),
 *   DEMO_KEEP_RUNNING=1 (leave both running for you to query)
 */
/* eslint-disable no-console -- a command-line program */
import { ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { constants } from 'node:os';
import { join } from 'node:path';
import { Logger } from '@nestjs/common';
import { Client, Pool } from 'pg';
import { freePort, waitForHttp } from '../bench/net';
import { BUILT_SERVICE } from '../bench/processes';
import { EmbeddedDatabase } from '../src/database/embedded-postgres';
import { withDeadline } from '../src/receive/ack-deadline';
import { startDemoSubscriber } from './demo-subscriber';
import { Rng } from '../simulator/faults';
import { mirrorDifferences } from '../simulator/mirror-check';
import { OtlpReceiver, traceTree } from '../simulator/otlp-collector';
import { PozySimulator } from '../simulator/simulator';

const SECRET = 'whsec_demo';
const settings = {
  steps: Number(process.env.DEMO_STEPS ?? 400),
  existingPosts: Number(process.env.DEMO_EXISTING_POSTS ?? 5_000),
  existingAccounts: Number(process.env.DEMO_EXISTING_ACCOUNTS ?? 40),
  seed: Number(process.env.DEMO_SEED ?? Math.floor(Math.random() * 2 ** 31)),
  port: Number(process.env.DEMO_PORT ?? 3000),
  databasePort: Number(process.env.EMBEDDED_DATABASE_PORT ?? 54329),
  keepRunning: process.env.DEMO_KEEP_RUNNING === '1',
  workspaces: Number(process.env.DEMO_WORKSPACES ?? 3),
  workspacePosts: Number(process.env.DEMO_WORKSPACE_POSTS ?? 1_000),
  /** A collector of the user's own; unset: the demo runs one on loopback and prints a trace from it. */
  otlpEndpoint: process.env.OTEL_EXPORTER_OTLP_ENDPOINT,
};
/** Seals the added workspaces' keys and secrets (a demo key: never one to use elsewhere). */
const DEMO_ENCRYPTION_KEY = 'demo:KioqKioqKioqKioqKioqKioqKioqKioqKioqKioqKio=';
const ADMIN_TOKEN = 'demo-admin-token';
/** The demo's read token (API_TOKENS): reads closed to anyone without it, as the demo recommends for production. */
const READ_TOKEN = 'demo-read-token-7c1e';
const READ = { authorization: `Bearer ${READ_TOKEN}` };
const MILD_FAULTS = {
  duplicateRate: 0.05,
  // Pozy gives up on these for good: only the backfill from its delivery logs can recover them.
  dropRate: 0.02,
  reorderMaxDelayMs: 300,
  api5xxRate: 0.02,
  api429Rate: 0.01,
  apiSlowRate: 0.05,
  apiSlowMs: 400,
  apiLatencyMs: 15,
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function recreateDatabase(adminUrl: string, name: string): Promise<string> {
  const admin = new Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Runs a backfill through the admin endpoint (of one workspace, or `default`'s) and waits for it; returns the events it recovered. */
async function backfill(baseUrl: string, workspace?: string): Promise<number> {
  const headers = { authorization: `Bearer ${ADMIN_TOKEN}` };
  const path = workspace ? `/admin/workspaces/${workspace}/backfill` : '/admin/backfill';
  const started = (await (await fetch(`${baseUrl}${path}`, { method: 'POST', headers })).json()) as { runId: string };
  for (;;) {
    const run = (await (await fetch(`${baseUrl}/admin/backfill/${started.runId}`, { headers })).json()) as {
      status: string;
      eventsRecovered: number;
      error: string | null;
    };
    if (run.status === 'succeeded') return run.eventsRecovered;
    if (run.status === 'failed') throw new Error(`the backfill failed: ${run.error}`);
    await sleep(100);
  }
}

/** The mirror's figures, of one workspace (the backlog is the deployment's); every workspace's without one. */
async function counts(pool: Pool, workspace?: string): Promise<{ events: number; posts: number; accounts: number; backlog: number }> {
  const { rows } = await pool.query<{ events: number; posts: number; accounts: number; backlog: number }>(
    `
    SELECT (SELECT count(*) FROM pozy_event WHERE $1::text IS NULL OR workspace_id = $1)::int AS events,
           (SELECT count(*) FROM post WHERE $1::text IS NULL OR workspace_id = $1)::int AS posts,
           (SELECT count(*) FROM account WHERE $1::text IS NULL OR workspace_id = $1)::int AS accounts,
           ((SELECT count(*) FROM reconcile_request WHERE due_at IS NOT NULL)
             + (SELECT count(*) FROM graphile_worker._private_jobs))::int AS backlog`,
    [workspace ?? null],
  );
  return rows[0];
}

interface ImportProgress {
  status: string;
  runId: string | null;
  phase?: string;
  pass?: number;
  startedAt?: string;
  finishedAt?: string | null;
  progress?: {
    posts: { done: number; total: number | null };
    currentPass: { done: number; total: number | null };
    accounts: { done: number; total: number | null };
    pagesRead: number;
    postsPerSecond: number | null;
  };
  error?: string | null;
}

async function importProgress(baseUrl: string): Promise<ImportProgress> {
  return ((await (await fetch(`${baseUrl}/sync/status`, { headers: READ })).json()) as { import: ImportProgress }).import;
}

function bar(done: number, total: number | null, width = 24): string {
  const filled = total ? Math.min(width, Math.round((done / total) * width)) : 0;
  return `${'█'.repeat(filled)}${'░'.repeat(width - filled)}`;
}

/**
 * Shows the import as it goes (a line every quarter second) until it has ended; returns it as it ended. The bar is the
 * posts listed, each once, of the most Pozy counted: it never goes back. A second listing pass, if the first ends with
 * Pozy counting other posts than it saw, is said once when it starts, and its own way through the list beside the bar.
 */
async function followImport(baseUrl: string): Promise<ImportProgress> {
  let last = '';
  let pass = 1;
  for (;;) {
    const run = await importProgress(baseUrl);
    const p = run.progress;
    if (run.pass !== undefined && run.pass > pass) {
      pass = run.pass;
      console.log(
        `  pass ${pass}: the listing ended with Pozy counting other posts than it saw (posts deleted or created meanwhile ` +
          `whose events the service has not applied: a delivery Pozy dropped or is still retrying), so the import lists ` +
          `the posts again from the start to find which, writing only what differs. The bar counts each post once, ` +
          `whichever pass listed it; "pass ${pass}: n / m" is how far this listing has come.`,
      );
    }
    if (p) {
      const passing = run.status === 'running' && run.phase === 'posts' && pass > 1;
      const line =
        `  import   ${bar(p.posts.done, p.posts.total)} ${p.posts.done.toLocaleString('en')}` +
        `${p.posts.total === null ? '' : ` / ${p.posts.total.toLocaleString('en')}`} posts, ` +
        `${p.accounts.done} / ${p.accounts.total ?? '?'} accounts${p.postsPerSecond ? `, ${Math.round(p.postsPerSecond).toLocaleString('en')} posts/s` : ''}` +
        `${run.status === 'running' ? ` (${run.phase}` : ''}` +
        `${passing ? `, pass ${pass}: ${p.currentPass.done.toLocaleString('en')}${p.currentPass.total === null ? '' : ` / ${p.currentPass.total.toLocaleString('en')}`}` : ''}` +
        `${run.status === 'running' ? ')' : ''}`;
      if (line !== last) console.log(line);
      last = line;
    }
    if (run.status !== 'running' && run.status !== 'pending') return run;
    await sleep(250);
  }
}

/** Adds a workspace through the admin API, its webhook made in Pozy by the service; then shows its import to its end. */
async function connectWorkspace(baseUrl: string, id: string, apiKey: string, apiUrl: string): Promise<void> {
  const headers = { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' };
  const added = await fetch(`${baseUrl}/admin/workspaces`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ id, apiKey, apiUrl, name: `Client ${id}` }),
  });
  const body = (await added.json()) as { webhook?: { url: string; test?: { delivered: boolean } }; message?: string };
  if (added.status !== 201) throw new Error(`adding workspace ${id} answered ${added.status}: ${body.message ?? ''}`);
  console.log(
    `  ${id}: added; its webhook ${body.webhook?.url} made in Pozy, test event ${body.webhook?.test?.delivered ? 'delivered' : 'NOT delivered'}`,
  );
  for (;;) {
    const state = (await (await fetch(`${baseUrl}/admin/workspaces/${id}`, { headers })).json()) as {
      import: { status: string; run: ImportProgress | null };
    };
    if (state.import.status === 'succeeded') {
      const run = state.import.run;
      const seconds = run?.startedAt && run.finishedAt ? (Date.parse(run.finishedAt) - Date.parse(run.startedAt)) / 1000 : 0;
      console.log(`  ${id}: imported ${run?.progress?.posts.done.toLocaleString('en') ?? '?'} posts in ${seconds.toFixed(1)} s`);
      return;
    }
    if (state.import.status === 'failed') throw new Error(`the import of ${id} failed`);
    await sleep(250);
  }
}

/** Refuses at once, saying what to do, when another process listens on the demo's port (the service would exit). */
function portFree(port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        new Error(
          error.code === 'EADDRINUSE'
            ? `port ${port} is taken by another process: set DEMO_PORT to a free port, or DEMO_PORT=0 for any free one`
            : `port ${port}: ${error.message}`,
        ),
      ),
    );
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve()));
  });
}

/** SIGTERM, and SIGKILL if it has not exited within SERVICE_STOP_WAIT_MS: either way, waited for (no zombie left). */
async function stopChild(child: ChildProcess): Promise<unknown> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const killer = setTimeout(() => {
    console.error(`the service did not exit within ${SERVICE_STOP_WAIT_MS / 1000} s of SIGTERM: killed`);
    child.kill('SIGKILL');
  }, SERVICE_STOP_WAIT_MS);
  return exited.finally(() => clearTimeout(killer));
}

const SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP'] as const;
/** A stop still under way after this is left behind, so that one stuck part never keeps the demo from exiting. */
const STOP_WAIT_MS = 30_000;
/** The service gets this long after SIGTERM (less than STOP_WAIT_MS, so that it is killed and waited for). */
const SERVICE_STOP_WAIT_MS = 20_000;

const bounded = (stop: Promise<unknown>) =>
  withDeadline(stop, STOP_WAIT_MS, () => new Error(`still not stopped after ${STOP_WAIT_MS / 1000} s; going on`));

async function main(): Promise<void> {
  Logger.overrideLogger(['error', 'warn']);
  let signalled: NodeJS.Signals | undefined;
  let failed = false;
  // With DEMO_KEEP_RUNNING the run is over and a signal is the expected way to end it.
  let ranToEnd = false;
  // Stops of what has started, run in reverse order at the end or on a signal.
  const stops: (() => Promise<unknown>)[] = [];
  const start = async <T>(what: () => Promise<T>, stop: (started: T) => Promise<unknown>): Promise<T> => {
    if (signalled) throw new Error(`${signalled} received`);
    const started = await what();
    stops.push(() => stop(started));
    return started;
  };
  console.log(
    `pozy-sync demo: seed ${settings.seed}; a simulated Pozy workspace of ${settings.existingPosts.toLocaleString('en')} posts and ` +
      `${settings.existingAccounts} accounts before the first start, then ${settings.steps} changes\n`,
  );
  const resources = (async () => {
    // Before anything starts: a taken port is said at once, not after PostgreSQL's first start.
    const port = settings.port || (await freePort());
    await portFree(port);
    const database = await start(
      () => EmbeddedDatabase.start({ dataDir: '.data/postgres', port: settings.databasePort, database: 'postgres' }),
      (db) => db.stop(),
    );
    const databaseUrl = await recreateDatabase(database.url, 'pozy_sync_demo');
    const sim = await start(
      () =>
        PozySimulator.start({
          apiKey: 'sk_sim_demo',
          seed: settings.seed,
          // Pozy's retry ladder (10 s, 100 s, ...) runs 100 times faster.
          timeScale: 100,
          faults: MILD_FAULTS,
          rateLimitPerMinute: 6_000,
          // Deliveries start once the service listens (setWebhookUrl below).
          webhook: { url: 'http://127.0.0.1:9/not-yet', secret: SECRET },
        }),
      (simulator) => simulator.stop(),
    );
    // The team's workspace, as it was before pozy-sync was deployed: nothing of it was ever announced by a webhook.
    sim.world.seedExisting({ posts: settings.existingPosts, accounts: settings.existingAccounts });
    // The clients' workspaces, each behind a key of its own, with no subscription until the service makes one.
    const clients = Array.from({ length: settings.workspaces }, (_, i) =>
      sim.addWorkspace({
        apiKey: `sk_sim_client_${i + 1}`,
        seed: settings.seed + i + 1,
        faults: MILD_FAULTS,
        rateLimitPerMinute: 6_000,
        seedExisting: { posts: settings.workspacePosts, accounts: 16 },
      }),
    );
    const collector = settings.otlpEndpoint
      ? null
      : await start(
          () => OtlpReceiver.start(),
          (c) => c.close(),
        );
    const traces = collector
      ? { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_BSP_SCHEDULE_DELAY: '500' }
      : { OTEL_EXPORTER_OTLP_ENDPOINT: settings.otlpEndpoint! };
    const spawnService = async () =>
      spawn(process.execPath, [BUILT_SERVICE], {
        env: {
          PATH: process.env.PATH ?? '',
          DATABASE_URL: databaseUrl,
          PORT: String(port),
          HOST: '127.0.0.1',
          POZY_API_URL: sim.url,
          POZY_API_KEY: sim.apiKey,
          POZY_WEBHOOK_SECRET: SECRET,
          POZY_RATE_LIMIT_PER_MINUTE: '6000',
          ADMIN_TOKEN,
          API_TOKENS: READ_TOKEN,
          // The demo runs the backfill itself, once the changes are done.
          BACKFILL_CRON: 'off',
          // No load balancer to move traffic away first: stopping need not wait.
          SHUTDOWN_DRAIN_MS: '0',
          LOG_LEVEL: 'warn',
          LOG_FORMAT: 'pretty',
          // The demo's subscriber listens on loopback, which is refused unless allowed.
          NOTIFY_ALLOWED_HOSTS: '127.0.0.1',
          // Added workspaces get their webhook made in Pozy, pointed here.
          PUBLIC_URL: `http://127.0.0.1:${port}`,
          SECRETS_ENCRYPTION_KEY: DEMO_ENCRYPTION_KEY,
          ...traces,
        },
        stdio: ['ignore', 'inherit', 'inherit'],
      });
    const service = await start(spawnService, stopChild);
    const pool = await start(
      async () => new Pool({ connectionString: databaseUrl, max: 2 }),
      (p) => p.end(),
    );
    const subscriber = await start(startDemoSubscriber, (s) => s.close());
    return { sim, port, pool, subscriber, clients, collector, service };
  })();
  let finishing: Promise<never> | undefined;
  const finish = () =>
    (finishing ??= (async () => {
      // A start under way (initdb takes seconds) completes, then is stopped like the rest.
      await resources.catch(() => undefined);
      for (const stop of stops.reverse()) await bounded(stop()).catch((error: unknown) => console.error(`stopping: ${String(error)}`));
      process.exit(signalled && !ranToEnd ? 128 + constants.signals[signalled] : failed ? 1 : 0);
    })());
  for (const signal of SIGNALS) {
    process.on(signal, () => {
      if (signalled) return;
      signalled = signal;
      console.log(`\n${signal}: stopping the service, the simulator and PostgreSQL`);
      void finish();
    });
  }

  try {
    const { sim, port, pool, subscriber, clients, collector, service } = await resources;
    const existing = sim.world.listPosts().map((post) => post._id);
    const seen = { postIds: new Set<string>(), profileIds: new Set<string>() };
    sim.world.onEvent((event) => {
      if (event.post) seen.postIds.add(event.post.id);
      if (event.account?.profileId) seen.profileIds.add(event.account.profileId);
    });
    const baseUrl = `http://127.0.0.1:${port}`;
    await waitForHttp(`${baseUrl}/health/ready`, 60_000, { child: service });
    console.log(`service    ${baseUrl}  (GET /posts, /accounts, /sync/status)`);
    console.log(`simulator  ${sim.url}  (Pozy API, key ${sim.apiKey})`);
    console.log(
      collector
        ? `traces     ${collector.url}/v1/traces  (the demo's own OTLP collector; OTEL_EXPORTER_OTLP_ENDPOINT=<yours> sends them to your collector)\n`
        : `traces     ${settings.otlpEndpoint}  (OTEL_EXPORTER_OTLP_ENDPOINT)\n`,
    );
    sim.setWebhookUrl(`${baseUrl}/webhooks/pozy`);
    // A team's endpoint, told of every change to the mirror.
    const subscribed = await fetch(`${baseUrl}/admin/subscriptions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        url: subscriber.url,
        secret: subscriber.secret,
        eventTypes: ['post.changed', 'post.deleted', 'account.changed', 'account.removed'],
      }),
    });
    if (subscribed.status !== 201) throw new Error(`subscribing answered ${subscribed.status}`);

    // The workspace changes from the start, while the service imports it: the webhooks are applied as usual.
    const rng = new Rng(settings.seed);
    const started = Date.now();
    let step = 0;
    const changes = (async () => {
      for (step = 1; step <= settings.steps; step += 1) {
        // Only changes Pozy announces: an edit without an event can only be found by a full sweep.
        sim.world.randomStep(rng, { silent: false });
        await sleep(10);
      }
    })();
    const imported = await followImport(baseUrl);
    if (imported.status !== 'succeeded') throw new Error(`the import ${imported.status}: ${imported.error ?? ''}`);
    const importSeconds = (Date.parse(imported.finishedAt ?? '') - Date.parse(imported.startedAt ?? '')) / 1000;
    if (clients.length > 0) console.log(`\nConnecting ${clients.length} more workspaces through POST /admin/workspaces (PUBLIC_URL ${baseUrl})`);
    // What each client's mirror can know: the posts its import lists, and those its events name from then on (a draft
    // made without an event is the next sweep's business, as for the environment's workspace).
    const clientKnown = clients.map((client) => {
      const known = { postIds: new Set(client.world.listPosts().map((post) => post._id)), profileIds: new Set<string>() };
      client.world.onEvent((event) => {
        if (event.post) known.postIds.add(event.post.id);
      });
      return known;
    });
    // One at a time, so that each import shows; the service would run IMPORT_CONCURRENCY of them at once.
    for (const [i, client] of clients.entries()) await connectWorkspace(baseUrl, `client-${i + 1}`, client.apiKey, sim.url);
    let lastReport = 0;
    for (let done = false; !done;) {
      done = await Promise.race([changes.then(() => true), sleep(1_000 - Math.min(1_000, Date.now() - lastReport)).then(() => false)]);
      lastReport = Date.now();
      const c = await counts(pool);
      const w = sim.stats().webhooks;
      console.log(
        `  ${String(Math.min(step, settings.steps)).padStart(5)}/${settings.steps} changes  ${String(w.eventsEmitted).padStart(5)} events  ` +
          `${String(w.attempts).padStart(5)} deliveries  ${String(c.events).padStart(5)} stored  ` +
          `${String(c.posts).padStart(5)} posts  ${String(c.accounts).padStart(3)} accounts  backlog ${c.backlog}`,
      );
    }
    // Then the clients' workspaces change, each announced to its own webhook.
    if (clients.length > 0) {
      for (let i = 0; i < Math.ceil(settings.steps / 2); i += 1) {
        for (const client of clients) client.world.randomStep(rng, { silent: false });
        await sleep(10);
      }
      const sent = clients.reduce((sum, client) => sum + client.stats().webhooks.eventsEmitted, 0);
      console.log(
        `  ${Math.ceil(settings.steps / 2)} changes in each of the ${clients.length} added workspaces: ${sent} events sent to their webhooks`,
      );
    }
    await sim.idle();
    for (const client of clients) await client.idle();
    console.log("  backfill: reading Pozy's delivery logs for what never arrived...");
    const recovered = await backfill(baseUrl);
    let recoveredByClients = 0;
    for (const i of clients.keys()) recoveredByClients += await backfill(baseUrl, `client-${i + 1}`);
    const deadline = Date.now() + 60_000;
    while ((await counts(pool)).backlog > 0 && Date.now() < deadline) await sleep(50);
    const caughtUpMs = Date.now() - started;
    while ((await pool.query("SELECT 1 FROM notification WHERE state = 'pending' LIMIT 1")).rowCount && Date.now() < deadline) await sleep(50);
    // The subscriber's newest version of every resource it was told about must be the mirror's current one. (It
    // subscribed once the service was up: what the import wrote before that, it was never told of.)
    const { rows: versions } = await pool.query<{ key: string; sequence: number }>(
      "SELECT 'post:' || id AS key, sequence FROM post UNION ALL SELECT 'account:' || id, sequence FROM account",
    );
    const behind = versions.filter((v) => subscriber.latest.has(v.key) && subscriber.latest.get(v.key) !== v.sequence).length;

    const c = await counts(pool, 'default');
    const webhooks = sim.stats().webhooks;
    const api = sim.stats().api.byRoute;
    const calls = (route: string) => Object.values(api[route] ?? {}).reduce((sum, n) => sum + n, 0);
    const failedCalls = Object.values(api)
      .flatMap((byStatus) => Object.entries(byStatus))
      .filter(([status]) => status !== '200' && status !== '404')
      .reduce((sum, [, n]) => sum + n, 0);
    // Every post that existed before the start, every one an event named since, every profile's accounts.
    const differences = await mirrorDifferences(
      pool,
      sim.world,
      { postIds: [...existing, ...seen.postIds], profileIds: sim.world.listProfiles().map((profile) => profile._id) },
      'default',
    );
    // Each client's: what its import listed, what its events named since, and every profile's accounts.
    const clientDifferences = await Promise.all(
      clients.map(async (client, i) => {
        const known = { postIds: [...clientKnown[i].postIds], profileIds: client.world.listProfiles().map((p) => p._id) };
        return { id: `client-${i + 1}`, differences: await mirrorDifferences(pool, client.world, known, `client-${i + 1}`) };
      }),
    );
    const truth = sim.world.snapshot();

    console.log('\nSummary');
    console.log(
      `  existing workspace           ${existing.length.toLocaleString('en')} posts and ${settings.existingAccounts} accounts imported in ` +
        `${importSeconds.toFixed(1)} s (${imported.progress?.pagesRead ?? 0} list pages), no admin call`,
    );
    console.log(`  events Pozy sent             ${webhooks.eventsEmitted}`);
    console.log(`  deliveries (with retries)    ${webhooks.attempts}, of which duplicates ${webhooks.duplicates}`);
    console.log(`  dropped (Pozy gave up)       ${webhooks.drops}, recovered by the backfill: ${recovered}`);
    console.log(`  events stored once each      ${c.events} (${webhooks.successes + recovered - c.events} duplicate deliveries absorbed)`);
    console.log(
      `  Pozy API calls               ${calls('GET /v1/posts/:postId')} post reads, ${calls('GET /v1/accounts')} account-list reads, ` +
        `${calls('GET /v1/posts')} post-list pages (${failedCalls} answered with a fault and retried); one read per event would have been ${webhooks.eventsEmitted}`,
    );
    console.log(`  mirrored                     ${c.posts} posts (${truth.deletedPostIds.length} deleted in Pozy), ${c.accounts} accounts`);
    console.log(`  caught up                    ${(caughtUpMs / 1000).toFixed(1)} s after the first change (the import meanwhile)`);
    console.log(
      `  change notifications         ${subscriber.received} received by a subscriber (${subscriber.repeated} repeated ids), ` +
        `${subscriber.badSignatures} bad signatures; ${behind === 0 ? "its newest version of every post and account it was told about is the mirror's" : `${behind} resources behind the mirror`}`,
    );
    if (behind > 0 || subscriber.badSignatures > 0) failed = true;
    if (clients.length > 0) {
      console.log(
        `  added workspaces             ${clients.length} through POST /admin/workspaces with managed webhooks: ` +
          `${clients.reduce((sum, client) => sum + client.stats().webhooks.eventsEmitted, 0)} events sent, ` +
          `${clients.reduce((sum, client) => sum + client.stats().webhooks.drops, 0)} dropped, recovered by their backfills: ${recoveredByClients}`,
      );
    }
    for (const { id, differences: diff } of clientDifferences) {
      if (diff.length === 0) console.log(`  result ${id.padEnd(21)} mirror equals truth`);
      else {
        failed = true;
        console.log(`  result ${id.padEnd(21)} MIRROR DIFFERS from truth in ${diff.length} rows:`);
        for (const difference of diff.slice(0, 5)) console.log(`    ${difference}`);
      }
    }
    if (differences.length === 0) {
      console.log('  result default               mirror equals truth');
    } else {
      failed = true;
      console.log(`  result default               MIRROR DIFFERS from truth in ${differences.length} rows:`);
      for (const difference of differences.slice(0, 10)) console.log(`    ${difference}`);
    }
    // What an operator's Prometheus would see now: pozy-sync's own series (not Node's, not histogram buckets).
    const metrics = await (await fetch(`${baseUrl}/metrics`, { headers: READ })).text();
    mkdirSync('.data', { recursive: true });
    writeFileSync(join('.data', 'demo-metrics.txt'), metrics);
    console.log('\nMetrics (GET /metrics; all of it in .data/demo-metrics.txt)');
    for (const line of metrics.split('\n')) {
      if (/^pozy_sync_(?!process_|nodejs_)\w+(?<!_bucket)(\{|\s)/.test(line)) console.log(`  ${line}`);
    }
    console.log("\nLatency (the objectives' histograms on /metrics: the bucket each percentile falls in)");
    for (const [name, what] of [
      ['pozy_sync_event_to_mirror_seconds', 'event delivered -> mirror commit'],
      ['pozy_sync_write_to_feed_position_seconds', 'mirror commit -> feed position'],
      ['pozy_sync_write_to_notification_seconds', 'mirror commit -> notification delivered'],
    ] as const) {
      console.log(`  ${what.padEnd(40)} ${histogramPercentiles(metrics, name)}`);
    }
    if (collector) printTrace(collector, await waitForDeliveryTrace(collector));
    if (settings.keepRunning) {
      ranToEnd = true;
      console.log(
        `\nStill running (DEMO_KEEP_RUNNING=1): try curl -H 'Authorization: Bearer ${READ_TOKEN}' '${baseUrl}/posts?limit=5' ; Ctrl-C to stop.`,
      );
      // Until a signal: its handler stops everything.
      return;
    }
  } catch (error) {
    failed = true;
    // Interrupted, what failed is only what the stops cut short.
    if (!signalled) console.error(`demo failed: ${error instanceof Error ? error.message : String(error)}`);
  }
  await finish();
}

/**
 * p50 and p99 of a histogram in the Prometheus text, every label summed: the upper bound of the bucket each falls in
 * (a histogram knows no finer), as `p50 ≤ 0.1 s, p99 ≤ 0.25 s (n = 120)`.
 */
function histogramPercentiles(text: string, name: string): string {
  const buckets = new Map<number, number>();
  for (const [, labels, value] of text.matchAll(new RegExp(`^${name}_bucket\\{([^}]*)\\} (\\S+)$`, 'gm'))) {
    const le = /(?:^|,)le="([^"]+)"/.exec(labels)?.[1];
    if (le === undefined) continue;
    const bound = le === '+Inf' ? Infinity : Number(le);
    buckets.set(bound, (buckets.get(bound) ?? 0) + Number(value));
  }
  const sorted = [...buckets].sort(([a], [b]) => a - b);
  const count = sorted.at(-1)?.[1] ?? 0;
  if (count === 0) return 'none measured';
  const at = (q: number) => {
    const bound = sorted.find(([, cumulative]) => cumulative >= q * count)?.[0] ?? Infinity;
    return bound === Infinity ? 'over the last bucket' : `≤ ${bound} s`;
  };
  return `p50 ${at(0.5)}, p99 ${at(0.99)} (n = ${count})`;
}

void main();

/** A delivery's trace that went all the way, to a notification delivered; null if none came within 15 s. */
async function waitForDeliveryTrace(collector: OtlpReceiver): Promise<string | null> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const notified = collector.spans.find(
      (s) =>
        s.name.startsWith('notify ') &&
        s.attributes['pozy_sync.notification.outcome'] === 'delivered' &&
        collector.trace(s.traceId).some((t) => t.name === 'POST /webhooks/pozy'),
    );
    if (notified || Date.now() > deadline) return notified?.traceId ?? null;
    await sleep(250);
  }
}

function printTrace(collector: OtlpReceiver, traceId: string | null): void {
  const traces = new Set(collector.spans.map((s) => s.traceId)).size;
  console.log(
    `\nTraces (OTLP/HTTP to ${collector.url}): ${collector.spans.length.toLocaleString('en')} spans in ${traces.toLocaleString('en')} traces`,
  );
  if (!traceId) return console.log('  no delivery went all the way to a notification in time');
  console.log(`  one delivery's way, trace ${traceId}:`);
  for (const line of traceTree(collector.trace(traceId))) console.log(`    ${line}`);
}
