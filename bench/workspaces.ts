/**
 * The workspaces scenario of npm run bench: 200 workspaces of 500 posts each added at once through
 * `POST /admin/workspaces` against one simulated Pozy (each key with Pozy's default budget, answers after
 * BENCH_API_LATENCY_MS): the time until every one is imported, beside the bound IMPORT_CONCURRENCY and the list calls
 * set; and meanwhile, the environment's workspace's event read latency (a post published in Pozy until the mirror
 * shows it), beside the same figure with no other workspace busy.
 *
 *   BENCH_WORKSPACES (200), BENCH_WORKSPACE_POSTS (500), BENCH_API_LATENCY_MS (50), BENCH_IMPORT_CONCURRENCY (4),
 *   BENCH_LOG_LEVEL (unset: the service's warnings only; e.g. `log` shows each import's line),
 *   BENCH_CPU_PROF_DIR (the service writes a CPU profile there, node --cpu-prof)
 */
/* eslint-disable no-console -- a command-line report */
import { Client } from 'pg';
import { POSTS_PAGE_LIMIT } from '../src/pozy/pozy-client.service';
import { PozySimulator } from '../simulator/simulator';
import { waitForHttp } from './net';
import { cell, intSetting, percentile, sleep, startBuiltService, stopProcess, withDatabase } from './processes';

const SECRET = 'whsec_bench_workspaces';
const API_KEY = 'sk_bench_home';
const ADMIN_TOKEN = 'bench-admin-token-workspaces';
/** Pozy's budget for 3 to 2,000 connected accounts, per key. */
const DEFAULT_BUDGET = 600;
/** Reads of the quiet workspace measured each time. */
const SAMPLES = 20;

const settings = {
  workspaces: intSetting('BENCH_WORKSPACES', 200),
  posts: intSetting('BENCH_WORKSPACE_POSTS', 500),
  apiLatencyMs: intSetting('BENCH_API_LATENCY_MS', 50),
  concurrency: intSetting('BENCH_IMPORT_CONCURRENCY', 4),
};

export async function runWorkspacesScenario(serverUrl: string): Promise<void> {
  // An import lists the accounts (one call), then the posts a page at a time, one after the other: its shortest time
  // is those calls' latency; IMPORT_CONCURRENCY of them run at once; each key's budget allows far more than that.
  const callsPerImport = 1 + Math.ceil(settings.posts / POSTS_PAGE_LIMIT);
  const boundS = Math.max(
    (Math.ceil(settings.workspaces / settings.concurrency) * callsPerImport * settings.apiLatencyMs) / 1000,
    callsPerImport / (DEFAULT_BUDGET / 60),
  );
  console.log(
    `workspaces: ${settings.workspaces} workspaces of ${settings.posts} posts added at once through POST /admin/workspaces; Pozy answers after ` +
      `${settings.apiLatencyMs} ms, ${DEFAULT_BUDGET} requests a minute per key; IMPORT_CONCURRENCY=${settings.concurrency}`,
  );
  const sim = await PozySimulator.start({
    apiKey: API_KEY,
    seed: 3,
    rateLimitPerMinute: DEFAULT_BUDGET,
    faults: { apiLatencyMs: settings.apiLatencyMs },
    webhook: { url: 'http://127.0.0.1:9/not-yet', secret: SECRET },
  });
  sim.world.seedExisting({ posts: 2_000, accounts: 16 });
  const keys = Array.from({ length: settings.workspaces }, (_, i) => {
    const apiKey = `sk_bench_ws_${i + 1}`;
    sim.addWorkspace({
      apiKey,
      rateLimitPerMinute: DEFAULT_BUDGET,
      faults: { apiLatencyMs: settings.apiLatencyMs },
      seedExisting: { posts: settings.posts, accounts: 8 },
    });
    return apiKey;
  });
  try {
    const profileDir = process.env.BENCH_CPU_PROF_DIR;
    await withDatabase(serverUrl, 'pozy_sync_bench_workspaces', async (databaseUrl) => {
      const { child, url: baseUrl } = await startBuiltService(
        databaseUrl,
        { url: sim.url, apiKey: API_KEY, webhookSecret: SECRET, ratePerMinute: DEFAULT_BUDGET },
        {
          ADMIN_TOKEN,
          SECRETS_ENCRYPTION_KEY: `bench:${Buffer.alloc(32, 5).toString('base64')}`,
          IMPORT_CONCURRENCY: String(settings.concurrency),
          LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn',
        },
        profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [],
      );
      const db = new Client({ connectionString: databaseUrl });
      try {
        await waitForHttp(`${baseUrl}/health/ready`, 60_000);
        await db.connect();
        sim.setWebhookUrl(`${baseUrl}/webhooks/pozy`);
        // The home workspace's own import first: its reads are what is measured.
        while ((await db.query("SELECT 1 FROM sweep_run WHERE workspace_id = 'default' AND status = 'succeeded'")).rowCount === 0) await sleep(100);
        const accountIds = [sim.world.listAccounts()[0]._id];
        const quiet: number[] = [];
        for (let i = 0; i < SAMPLES; i += 1) quiet.push(await createAndWait(sim, db, accountIds));

        const started = Date.now();
        const headers = { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' };
        const added = await Promise.all(
          keys.map((apiKey, i) =>
            fetch(`${baseUrl}/admin/workspaces`, {
              method: 'POST',
              headers,
              body: JSON.stringify({ id: `ws-${i + 1}`, apiKey, manageWebhook: false }),
            }).then((r) => r.status),
          ),
        );
        const refused = added.filter((status) => status !== 201).length;
        if (refused > 0) throw new Error(`${refused} workspaces were not added`);
        const addedS = (Date.now() - started) / 1000;
        const busy: number[] = [];
        let imported = 0;
        while (imported < settings.workspaces) {
          busy.push(await createAndWait(sim, db, accountIds));
          const { rows } = await db.query<{ n: number }>(
            "SELECT count(DISTINCT workspace_id)::int AS n FROM sweep_run WHERE kind = 'import' AND status = 'succeeded' AND workspace_id <> 'default'",
          );
          imported = rows[0].n;
          await sleep(100);
        }
        const seconds = (Date.now() - started) / 1000;
        console.log('');
        console.log(
          `  ${'imports'.padEnd(40)}${'seconds'.padStart(10)}${'bound s'.padStart(10)}${'vs bound'.padStart(10)}${'adding s'.padStart(10)}`,
        );
        console.log(
          `  ${`${settings.workspaces} workspaces at once`.padEnd(40)}${cell(seconds, 1)}${cell(boundS, 1)}${cell(seconds / boundS, 2, 9)}x${cell(addedS, 1)}`,
        );
        console.log(
          `  (bound: ${settings.workspaces} imports of ${callsPerImport} list calls at ${settings.apiLatencyMs} ms, ${settings.concurrency} at a time; goal within 1.2x)`,
        );
        console.log('');
        console.log(`  ${"the home workspace's event read".padEnd(40)}${'reads'.padStart(8)}${'p50 ms'.padStart(10)}${'p99 ms'.padStart(10)}`);
        console.log(
          `  ${'quiet (no other workspace busy)'.padEnd(40)}${cell(quiet.length, 0, 8)}${cell(percentile(quiet, 50))}${cell(percentile(quiet, 99))}`,
        );
        console.log(
          `  ${`while ${settings.workspaces} workspaces import`.padEnd(40)}${cell(busy.length, 0, 8)}${cell(percentile(busy, 50))}${cell(percentile(busy, 99))}`,
        );
        console.log(
          `  busy vs quiet: p50 ${(percentile(busy, 50) / percentile(quiet, 50)).toFixed(2)}x, p99 ${(percentile(busy, 99) / percentile(quiet, 99)).toFixed(2)}x (goal: within 1.5x)`,
        );
      } finally {
        await db.end().catch(() => undefined);
        await stopProcess(child);
      }
    });
  } finally {
    await sim.stop();
  }
}

/** Schedules a post in the home workspace (Pozy announces it) and waits until its mirror holds it; the time that took. */
async function createAndWait(sim: PozySimulator, db: Client, accountIds: string[]): Promise<number> {
  const started = Date.now();
  const post = sim.world.createPost({ content: `bench workspaces ${started}`, accountIds, scheduledFor: Date.now() + 3_600_000 });
  while (Date.now() - started < 30_000) {
    const { rows } = await db.query("SELECT 1 FROM post WHERE workspace_id = 'default' AND id = $1", [post._id]);
    if (rows.length > 0) return Date.now() - started;
    await sleep(10);
  }
  return Infinity;
}
