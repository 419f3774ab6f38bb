import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'pg';
import { mirrorDifferences } from '../../simulator/mirror-check';
import { PozySimulator } from '../../simulator/simulator';
import { freePort } from './ports';
import { BUILT_MAIN, ServiceProcess, spawnService } from './process';
import { TEST_WEBHOOK_SECRET, waitFor } from './service';
import { LoadFigures, WebhookLoad } from './webhook-load';

/** One built service process a failover test runs, with what it needs to be checked from outside. */
export interface FailoverService {
  process: ServiceProcess;
  baseUrl: string;
  /** Throws if the process has exited: a failover must never end it. */
  alive(): void;
  /** `GET /health/ready`: its status and, when not ready, the database check's reason. */
  readiness(): Promise<{ status: number; reason: string | undefined }>;
  /** A sample's value from /metrics (summed over label sets that match `labels`); 0 when absent. */
  metric(name: string, labels?: Record<string, string>): Promise<number>;
  stop(): Promise<void>;
}

/**
 * A spawned built service (`node dist/main.js`, or another release's `script`) on `databaseUrl`, with a spool directory of its own, the simulator as
 * its Pozy, and no schedule or import of its own (the test's load is all it does). Resolves once it is ready.
 */
export async function startFailoverService(
  sim: PozySimulator,
  databaseUrl: string,
  env: Record<string, string> = {},
  script = BUILT_MAIN,
): Promise<FailoverService> {
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const spoolDir = mkdtempSync(join(tmpdir(), 'pozy-failover-spool-'));
  const child = spawnService(
    {
      PORT: String(port),
      HOST: '127.0.0.1',
      DATABASE_URL: databaseUrl,
      POZY_API_URL: sim.url,
      POZY_API_KEY: sim.apiKey,
      POZY_WEBHOOK_SECRET: TEST_WEBHOOK_SECRET,
      POZY_RATE_LIMIT_PER_MINUTE: '100000',
      SPOOL_DIR: spoolDir,
      BACKFILL_CRON: 'off',
      INITIAL_IMPORT: 'off',
      LOG_LEVEL: 'warn',
      ...env,
    },
    tmpdir(),
    script,
  );
  const alive = () => {
    if (child.child.exitCode !== null) throw new Error(`the service exited with code ${child.child.exitCode}:\n${child.output().slice(-4_000)}`);
  };
  const service: FailoverService = {
    process: child,
    baseUrl,
    alive,
    async readiness() {
      const response = await fetch(`${baseUrl}/health/ready`, { signal: AbortSignal.timeout(5_000) });
      const body = (await response.json()) as { details?: { database?: { reason?: string } } };
      return { status: response.status, reason: body.details?.database?.reason };
    },
    async metric(name, labels = {}) {
      const text = await (await fetch(`${baseUrl}/metrics`)).text();
      let sum = 0;
      for (const line of text.split('\n')) {
        const match = /^([a-z_]+)(\{[^}]*\})? (\S+)$/.exec(line);
        if (!match || match[1] !== name) continue;
        if (Object.entries(labels).every(([key, value]) => (match[2] ?? '').includes(`${key}="${value}"`))) sum += Number(match[3]);
      }
      return sum;
    },
    async stop() {
      if (child.child.exitCode === null) {
        child.child.kill('SIGTERM');
        await child.exited;
      }
      rmSync(spoolDir, { recursive: true, force: true });
    },
  };
  await waitFor(
    'the service to become ready',
    async () => {
      alive();
      return (await service.readiness().catch(() => undefined))?.status === 200 ? true : undefined;
    },
    90_000,
    100,
  );
  return service;
}

/** Webhook load at `perSecond` on a world of a few profiles and accounts (posts come from the load), once some are accepted. */
export async function startLoad(sim: PozySimulator, baseUrl: () => string, options: { perSecond: number; seed: number }): Promise<WebhookLoad> {
  const load = new WebhookLoad(sim.world, baseUrl, options);
  sim.world.seedWorld({ profiles: 3, accountsPerProfile: 3, posts: 0 });
  load.start();
  await waitFor('some events accepted', async () => (load.accepted >= 100 ? true : undefined), 60_000, 100);
  return load;
}

/** What a failover test reports of its run (the closing note's figures). */
export interface FailoverOutcome extends LoadFigures {
  /** Accepted events not in the database at the end: always 0, or the test fails. */
  lost: number;
  /** From the moment a writable primary was reachable to the first event stored (not spooled), and to ready. */
  firstWriteMs: number;
  readyMs: number;
  /** From the load's end to the mirror equal to the simulator's truth. */
  convergedMs: number;
}

/**
 * After a fault: waits for an event stored on the writable primary and for readiness (timed from `writableAt`), stops
 * the load, then waits until every accepted event is in `primaryUrl`'s database and the mirror of every post and
 * profile Pozy announced equals the simulator's truth. Every wait fails at once if a service process exits.
 */
export async function settle(options: {
  sim: PozySimulator;
  load: WebhookLoad;
  services: FailoverService[];
  primaryUrl: string;
  writableAt: number;
}): Promise<FailoverOutcome> {
  const { sim, load, services, primaryUrl, writableAt } = options;
  const allAlive = () => services.forEach((s) => s.alive());
  await waitFor(
    'an event stored on the writable primary',
    async () => {
      allAlive();
      return load.firstStoredAfter(writableAt) ? true : undefined;
    },
    60_000,
    50,
  );
  const firstWriteMs = load.firstStoredAfter(writableAt)! - writableAt;
  await waitFor(
    'every service ready',
    async () => {
      allAlive();
      const answers = await Promise.all(services.map((s) => s.readiness().catch(() => undefined)));
      return answers.every((a) => a?.status === 200) ? true : undefined;
    },
    60_000,
    50,
  );
  const readyMs = Date.now() - writableAt;
  // A little more load on the new primary, then every change made must be answered.
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  const figures = await load.stop();
  const stoppedAt = Date.now();

  const direct = new Pool({ connectionString: primaryUrl, max: 2 });
  try {
    const ids = [...load.acceptedIds];
    let stored = 0;
    await waitFor(
      'every accepted event in the database',
      async () => {
        allAlive();
        const { rows } = await direct.query<{ n: number }>('SELECT count(*)::int AS n FROM pozy_event WHERE id = ANY($1)', [ids]);
        stored = rows[0].n;
        return stored === ids.length ? true : undefined;
      },
      90_000,
      250,
    );
    await waitFor(
      'the mirror to equal the truth',
      async () => {
        allAlive();
        // Every post and profile Pozy announced (some posts it never announces: a sweep's business, not this test's).
        const announced = async (type: string) =>
          (await direct.query<{ id: string }>('SELECT DISTINCT resource_id AS id FROM pozy_event WHERE resource_type = $1', [type])).rows.map(
            (r) => r.id,
          );
        const differences = await mirrorDifferences(direct, sim.world, { postIds: await announced('post'), profileIds: await announced('profile') });
        return differences.length === 0 ? true : undefined;
      },
      120_000,
      500,
    );
    return { ...figures, lost: ids.length - stored, firstWriteMs, readyMs, convergedMs: Date.now() - stoppedAt };
  } finally {
    await direct.end();
  }
}

/** One line for the run's summary: what the closing note reports. */
export function describeOutcome(name: string, outcome: FailoverOutcome, extra = ''): string {
  return (
    `${name}: ${outcome.emitted} events, ${outcome.accepted} accepted (${outcome.spooled} spooled), ${outcome.refused} refused, ` +
    `${outcome.unanswered} unanswered, ${outcome.lost} lost; writes ${outcome.firstWriteMs} ms and ready ${outcome.readyMs} ms after a ` +
    `writable primary; mirror converged ${outcome.convergedMs} ms after the load${extra}\n`
  );
}
