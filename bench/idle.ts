/**
 * The idle scenario of npm run bench: the built service (ROLE=all, as deployed by default) started against a fresh
 * database and an empty simulated workspace, left until it has migrated, imported nothing and settled. Prints its
 * resident set once idle and its peak while booting, beside the goal.
 *
 *   BENCH_IDLE_SETTLE_S (how long the RSS must stay within 1 MB to count as settled; 5)
 */
/* eslint-disable no-console -- a command-line report */
import { readFileSync } from 'node:fs';
import { Client } from 'pg';
import { PozySimulator } from '../simulator/simulator';
import { waitForHttp } from './net';
import { cell, intSetting, sleep, startBuiltService, stopProcess, withDatabase } from './processes';

const API_KEY = 'sk_bench';
const GOAL_MB = 150;
const settings = { settleS: intSetting('BENCH_IDLE_SETTLE_S', 5) };

/** A process's current (VmRSS) and peak (VmHWM) resident set in MB, from Linux's /proc; NaN where it does not tell. */
export function residentMb(pid: number | undefined): { rss: number; peak: number } {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? NaN);
    return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
  } catch {
    return { rss: NaN, peak: NaN };
  }
}

export async function runIdleScenario(serverUrl: string): Promise<void> {
  console.log('idle: the built service (ROLE=all) on a fresh database, an empty workspace, nothing to do');
  const sim = await PozySimulator.start({ apiKey: API_KEY, rateLimitPerMinute: 600 });
  try {
    await withDatabase(serverUrl, 'pozy_sync_bench_idle', async (databaseUrl) => {
      const { child, url } = await startBuiltService(databaseUrl, {
        url: sim.url,
        apiKey: API_KEY,
        webhookSecret: 'whsec_bench',
        ratePerMinute: 600,
      });
      const db = new Client({ connectionString: databaseUrl });
      try {
        await waitForHttp(`${url}/health/ready`, 60_000);
        await db.connect();
        // Idle once the first start's import of the empty workspace has finished...
        for (const deadline = Date.now() + 60_000; Date.now() < deadline; await sleep(200)) {
          const { rows } = await db.query<{ status: string }>("SELECT status FROM sweep_run WHERE kind = 'import' ORDER BY started_at DESC LIMIT 1");
          if (rows[0] && rows[0].status !== 'running') break;
        }
        // ...and its resident set has stopped moving.
        let last = residentMb(child.pid).rss;
        for (let steady = 0, deadline = Date.now() + 120_000; steady < settings.settleS && Date.now() < deadline;) {
          await sleep(1_000);
          const now = residentMb(child.pid).rss;
          steady = Math.abs(now - last) <= 1 ? steady + 1 : 0;
          last = now;
        }
        const { rss, peak } = residentMb(child.pid);
        console.log(`  ${''.padEnd(30)}${'RSS MB'.padStart(10)}${'goal MB'.padStart(10)}`);
        console.log(`  ${'idle'.padEnd(30)}${cell(rss, 1)}${cell(GOAL_MB)}`);
        console.log(`  ${'peak while booting'.padEnd(30)}${cell(peak, 1)}`);
        console.log(`  idle RSS ${rss <= GOAL_MB ? 'within' : 'ABOVE'} the ${GOAL_MB} MB goal`);
      } finally {
        await db.end().catch(() => undefined);
        await stopProcess(child);
      }
    });
  } finally {
    await sim.stop();
  }
}
