/**
 * The import scenario of npm run bench: the first start against a workspace that already holds 100,000 posts and
 * 2,000 accounts, Pozy's API answering after 50 ms, and Pozy's default budget (600 requests a minute). It measures
 * the time to import beside the lower bound that budget sets (the list calls needed, divided by the budget per
 * second), the API calls made, the service's CPU time and peak RSS, once for each budget asked for; and, during the
 * import, how long an event's read waits:
 * end to end (a webhook's change until the mirror shows it), and at the budget itself, lanes against one FIFO line,
 * both under the same load (an import keeping its pages requested ahead) on the same shared budget.
 *
 *   BENCH_IMPORT_POSTS (100000), BENCH_IMPORT_ACCOUNTS (2000), BENCH_API_LATENCY_MS (50),
 *   BENCH_IMPORT_RATE_LIMIT (Pozy's budget in requests a minute, comma-separated for one import at each: 600,1200; 600),
 *   BENCH_LANES_SECONDS (how long each budget line is measured; 30),
 *   BENCH_CPU_PROF_DIR (the service writes a CPU profile there, node --cpu-prof)
 */
/* eslint-disable no-console -- a command-line report */
import { readFileSync } from 'node:fs';
import { Client } from 'pg';
import { AppConfig } from '../src/config/app-config';
import { ConnectionMonitor } from '../src/database/connection-monitor';
import { DatabaseService } from '../src/database/database.service';
import { Lane } from '../src/pozy/budget/budget-policy';
import { budgetKeyId } from '../src/pozy/budget/budget-key';
import { BudgetRepository } from '../src/pozy/budget/budget.repository';
import { PozyBudget } from '../src/pozy/budget/pozy-budget.service';
import { POSTS_PAGE_LIMIT } from '../src/pozy/pozy-client.service';
import { PozySimulator } from '../simulator/simulator';
import { waitForHttp } from './net';
import { cell, intSetting, percentile, sleep, startBuiltService, stopProcess, withDatabase } from './processes';

const SECRET = 'whsec_bench';
const API_KEY = 'sk_bench';
/** The import's list pages in flight at once (as the service requests them ahead). */
const PAGES_AHEAD = 3;

const settings = {
  posts: intSetting('BENCH_IMPORT_POSTS', 100_000),
  accounts: intSetting('BENCH_IMPORT_ACCOUNTS', 2_000),
  apiLatencyMs: intSetting('BENCH_API_LATENCY_MS', 50),
  budgets: budgetsSetting(),
  lanesSeconds: intSetting('BENCH_LANES_SECONDS', 30),
};

interface RunRow {
  status: string;
  started_at: Date;
  finished_at: Date | null;
  posts_done: number;
  pages_read: number;
  pass: number;
  posts_created: number;
  accounts_created: number;
}

/** BENCH_IMPORT_RATE_LIMIT: one budget (requests a minute) or several, comma-separated. */
function budgetsSetting(): number[] {
  const budgets = (process.env.BENCH_IMPORT_RATE_LIMIT ?? '600').split(',').map((part) => Number(part.trim()));
  if (budgets.length === 0 || budgets.some((n) => !Number.isInteger(n) || n < 1)) {
    throw new Error('BENCH_IMPORT_RATE_LIMIT must be positive integers, comma-separated');
  }
  return budgets;
}

/** A process's CPU time so far (user and system, Linux's /proc/<pid>/stat), in seconds; NaN where /proc does not tell. */
function cpuSeconds(pid: number | undefined): number {
  try {
    // The fields after the command's closing parenthesis: utime and stime are the 12th and 13th, in clock ticks.
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(')').pop()!.trim().split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return NaN;
  }
}

/** The peak resident set of a process (Linux's VmHWM), in MB; NaN where /proc does not tell. */
function peakRssMb(pid: number | undefined): number {
  try {
    const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) / 1024 : NaN;
  } catch {
    return NaN;
  }
}

export async function runImportScenario(serverUrl: string): Promise<void> {
  const listCalls = Math.ceil(settings.posts / POSTS_PAGE_LIMIT) + 1;
  console.log(
    `import: a workspace of ${settings.posts.toLocaleString('en')} posts and ${settings.accounts.toLocaleString('en')} accounts before the ` +
      `first start; Pozy answers after ${settings.apiLatencyMs} ms; budget ${settings.budgets.join(', ')} requests a minute`,
  );
  const results: ImportResult[] = [];
  const row = (r: ImportResult) =>
    console.log(
      `  ${`pozy-sync, ${r.budget} requests a minute`.padEnd(40)}${cell(r.seconds, 1)}${cell(r.boundS, 1)}${cell(r.seconds / r.boundS, 2, 9)}x` +
        `${cell(r.cpuS, 1, 8)}${cell(r.apiCalls, 0, 11)}${cell(r.listPages, 0, 12)}${cell(r.rssMb, 0, 13)}`,
    );
  const header = () =>
    console.log(
      `  ${'import'.padEnd(40)}${'seconds'.padStart(10)}${'bound s'.padStart(10)}${'vs bound'.padStart(10)}${'CPU s'.padStart(8)}${'API calls'.padStart(11)}` +
        `${'list pages'.padStart(12)}${'peak RSS MB'.padStart(13)}`,
    );
  for (const budget of settings.budgets) {
    const seeding = Date.now();
    const sim = await PozySimulator.start({
      apiKey: API_KEY,
      seed: 1,
      rateLimitPerMinute: budget,
      faults: { apiLatencyMs: settings.apiLatencyMs },
      webhook: { url: 'http://127.0.0.1:9/not-yet', secret: SECRET },
    });
    try {
      sim.world.seedExisting({ posts: settings.posts, accounts: settings.accounts });
      console.log(`  workspace seeded in ${((Date.now() - seeding) / 1000).toFixed(1)} s (budget ${budget} a minute)`);
      const result = await withDatabase(serverUrl, 'pozy_sync_bench_import', (url) => importOnce(sim, url, budget, listCalls / (budget / 60)));
      // Each import's row as soon as it is known: a long run stopped halfway still tells what it measured.
      header();
      row(result);
      results.push(result);
    } finally {
      await sim.stop();
    }
  }
  console.log('');
  header();
  results.forEach(row);
  console.log(
    `  (bound: ${listCalls} list calls at the budget a second; CPU s: the service's own, user and system; ` +
      `goal: within 1.2x of the bound, under 300 MB)`,
  );
  for (const r of results) console.log(`  ${r.budget} a minute: ${r.created}; ${r.endToEnd}`);
  const lines = await withDatabase(serverUrl, 'pozy_sync_bench_lanes', (url) => budgetLines(url, settings.budgets[0]));
  console.log('');
  console.log(
    `  an event's read while the import holds the budget (realtime takes every ~0.5 s, the import keeping ${PAGES_AHEAD} pages requested; ` +
      `${settings.budgets[0]} a minute)`,
  );
  console.log(`  ${'budget'.padEnd(40)}${'waits'.padStart(8)}${'p50 ms'.padStart(10)}${'p99 ms'.padStart(10)}${'max ms'.padStart(10)}`);
  for (const line of lines) {
    console.log(
      `  ${line.name.padEnd(40)}${cell(line.waits.length, 0, 8)}${cell(percentile(line.waits, 50))}${cell(percentile(line.waits, 99))}${cell(Math.max(...line.waits))}`,
    );
  }
  const [lanes, fifo] = lines;
  console.log(`  p50 with lanes vs one line: ${(percentile(lanes.waits, 50) / percentile(fifo.waits, 50)).toFixed(2)}x`);
}

interface ImportResult {
  budget: number;
  seconds: number;
  boundS: number;
  cpuS: number;
  apiCalls: number;
  listPages: number;
  rssMb: number;
  created: string;
  endToEnd: string;
}

/** The service's own import of the simulated workspace at `budget` requests a minute, timed. */
async function importOnce(sim: PozySimulator, databaseUrl: string, budget: number, boundS: number): Promise<ImportResult> {
  const profileDir = process.env.BENCH_CPU_PROF_DIR;
  const { child: service, url: baseUrl } = await startBuiltService(
    databaseUrl,
    { url: sim.url, apiKey: API_KEY, webhookSecret: SECRET, ratePerMinute: budget },
    {},
    profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [],
  );
  const db = new Client({ connectionString: databaseUrl });
  try {
    await waitForHttp(`${baseUrl}/health/ready`, 60_000);
    await db.connect();
    sim.setWebhookUrl(`${baseUrl}/webhooks/pozy`);
    const callsBefore = sim.stats().api.requests;
    const reflected: number[] = [];
    // The newest posts are mostly scheduled: those are the ones published meanwhile.
    const scheduled = sim.world
      .queryPosts({ sortBy: 'created-desc', offset: 0, limit: 500 })
      .posts.filter((post) => post.status === 'scheduled')
      .map((post) => post._id);
    let run: RunRow | undefined;
    // Every two seconds of the import, a post is published in Pozy: its webhook's read competes with the import.
    for (let nextChange = Date.now() + 2_000; ;) {
      run = (await db.query<RunRow>("SELECT * FROM sweep_run WHERE kind = 'import' ORDER BY started_at DESC LIMIT 1")).rows[0];
      if (run && run.status !== 'running') break;
      if (service.exitCode !== null || service.signalCode !== null) {
        throw new Error(`the service stopped during the import (${service.signalCode ?? `exit ${service.exitCode}`})`);
      }
      if (Date.now() >= nextChange && run) {
        nextChange = Date.now() + 2_000;
        const postId = scheduled.pop();
        if (postId) reflected.push(await publishAndWait(sim, db, postId));
        continue;
      }
      await sleep(100);
    }
    if (!run || run.status !== 'succeeded' || !run.finished_at) throw new Error(`the import ended ${run?.status ?? 'never'}`);
    const api = sim.stats().api;
    return {
      budget,
      seconds: (run.finished_at.getTime() - run.started_at.getTime()) / 1000,
      boundS,
      cpuS: cpuSeconds(service.pid),
      apiCalls: api.requests - callsBefore,
      listPages: Object.values(api.byRoute['GET /v1/posts'] ?? {}).reduce((sum, n) => sum + n, 0),
      rssMb: peakRssMb(service.pid),
      created:
        `${run.posts_created.toLocaleString('en')} posts and ${run.accounts_created.toLocaleString('en')} accounts created, ` +
        `${run.pass} listing(s)`,
      endToEnd:
        reflected.length === 0
          ? 'no change fell inside the import'
          : `a webhook's change was in the mirror after p50 ${percentile(reflected, 50)} ms, max ${Math.max(...reflected)} ms (${reflected.length} changes)`,
    };
  } finally {
    await db.end().catch(() => undefined);
    await stopProcess(service);
  }
}

/** Publishes a scheduled post and waits until the mirror shows it published; the time that took. */
async function publishAndWait(sim: PozySimulator, db: Client, postId: string): Promise<number> {
  const started = Date.now();
  sim.world.publishPost(postId);
  const status = sim.world.getPost(postId)!.status;
  while (Date.now() - started < 30_000) {
    const { rows } = await db.query<{ status: string }>('SELECT status FROM post WHERE id = $1', [postId]);
    if (rows[0]?.status === status) return Date.now() - started;
    await sleep(20);
  }
  return Infinity;
}

/**
 * The shared budget alone, on its own database, under the import's load: three pages always requested, each
 * holding its token for Pozy's latency; and an event's read every half second or so. With lanes, then with one
 * line in arrival order (the same budget, lanes off).
 */
async function budgetLines(databaseUrl: string, budgetPerMinute: number): Promise<Array<{ name: string; waits: number[] }>> {
  const config = AppConfig.fromEnvironment({ DATABASE_URL: databaseUrl, POZY_API_KEY: API_KEY, LOG_LEVEL: 'warn' });
  const database = new DatabaseService(config, new ConnectionMonitor());
  await database.onModuleInit();
  try {
    const lines: Array<{ name: string; waits: number[] }> = [];
    for (const lanes of [true, false]) {
      await database.pool.query(`UPDATE pozy_budget SET state = '{}'`);
      const budget = new PozyBudget(
        new BudgetRepository(database),
        budgetKeyId(API_KEY),
        { perWindow: budgetPerMinute, windowMs: 60_000, reserve: 0.2, maxPauseMs: config.pozy.maxPauseMs },
        { lanes },
      );
      const until = Date.now() + settings.lanesSeconds * 1000;
      const pull = async (lane: Lane) => {
        while (Date.now() < until) {
          await budget.take(lane);
          await sleep(settings.apiLatencyMs);
        }
      };
      const waits: number[] = [];
      const events = (async () => {
        while (Date.now() < until) {
          await sleep(250 + Math.random() * 500);
          const asked = Date.now();
          await budget.take('realtime');
          waits.push(Date.now() - asked);
        }
      })();
      await Promise.all([...Array.from({ length: PAGES_AHEAD }, () => pull('bulk')), events]);
      budget.onApplicationShutdown();
      lines.push({ name: lanes ? 'shared budget, priority lanes' : 'shared budget, one FIFO line (lanes off)', waits });
    }
    return lines;
  } finally {
    await database.onApplicationShutdown();
  }
}
