/**
 * The receive-path scenario of npm run bench: the built service against a bare baseline receiver, same database
 * server, same machine, same load. Prints throughput, latency percentiles, errors and the ratios.
 *
 * pozy-sync runs twice: as deployed by default (ROLE=all: the receiver and the worker that drains its reconcile
 * requests share the process and the database) and as an api-only replica (ROLE=api: the receive path alone).
 *
 *   BENCH_DURATION_S (default 10), BENCH_CONNECTIONS (default 50), BENCH_POSTS (distinct posts, default 1000),
 *   BENCH_LOG_LEVEL (pozy-sync's LOG_LEVEL; default log, as deployed: one log line per request),
 *   BENCH_CPU_PROF_DIR (each pozy-sync run writes a CPU profile there, node --cpu-prof; not the baseline)
 */
/* eslint-disable no-console -- a command-line report */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { Client } from 'pg';
import { signPozyPayload } from '../src/webhooks/webhook-signature';
import { freePort, waitForHttp } from './net';
import { BUILT_SERVICE, cell, startProcess, stopProcess, withDatabase } from './processes';

const SECRET = 'whsec_bench';
const SIMULATOR_RATE_LIMIT_PER_MINUTE = 100_000;
const settings = {
  durationS: Number(process.env.BENCH_DURATION_S ?? 10),
  connections: Number(process.env.BENCH_CONNECTIONS ?? 50),
  posts: Number(process.env.BENCH_POSTS ?? 1000),
};

interface Measured {
  name: string;
  requestsPerSecond: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  errors: number;
  non2xx: number;
  accepted: number;
  storedRows: number;
  /** ROLE=all: seconds after the load until every reconcile request had been run by the worker. */
  drainS?: number;
}

/** One unique, signed Pozy event per request, for a post among `posts`. */
function signedEventRequest(): autocannon.Request {
  let n = 0;
  return {
    method: 'POST',
    path: '/webhooks/pozy',
    setupRequest: (request) => {
      n += 1;
      const id = randomUUID();
      const body = JSON.stringify({
        id,
        event: 'post.published',
        timestamp: new Date().toISOString(),
        post: {
          id: `66aa01f3c2b1e4d5f6a7${(n % settings.posts).toString(16).padStart(4, '0')}`,
          content: 'Spring sale starts today',
          status: 'published',
          scheduledFor: '2026-03-02T09:00:00.000Z',
          platforms: [{ platform: 'linkedin', status: 'published', accountId: '66aa00aa11bb22cc33dd44ee' }],
        },
      });
      return {
        ...request,
        body,
        headers: {
          'content-type': 'application/json',
          'x-pozy-event': 'post.published',
          'x-pozy-event-id': id,
          'x-pozy-delivery-id': randomUUID(),
          'x-pozy-attempt': '1',
          'x-pozy-signature': signPozyPayload(SECRET, body),
        },
      };
    },
  };
}

async function load(url: string, durationS: number): Promise<autocannon.Result> {
  return autocannon({ url, connections: settings.connections, duration: durationS, requests: [signedEventRequest()] });
}

async function countRows(databaseUrl: string): Promise<number> {
  const client = new Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM pozy_event');
    return rows[0].n;
  } finally {
    await client.end();
  }
}

/** Reconcile work not yet done: outbox rows plus graphile-worker jobs. */
async function backlog(databaseUrl: string): Promise<number> {
  const client = new Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ n: number }>(
      'SELECT (SELECT count(*) FROM reconcile_request WHERE due_at IS NOT NULL) + (SELECT count(*) FROM graphile_worker._private_jobs) AS n',
    );
    return Number(rows[0].n);
  } finally {
    await client.end();
  }
}

async function drainSeconds(databaseUrl: string, timeoutS = 120): Promise<number> {
  const started = Date.now();
  while ((await backlog(databaseUrl)) > 0) {
    if (Date.now() - started > timeoutS * 1000) return Infinity;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return (Date.now() - started) / 1000;
}

async function measure(
  name: string,
  script: string,
  databaseUrl: string,
  env: Record<string, string>,
  options: { drain?: boolean; profile?: boolean } = {},
): Promise<Measured> {
  const port = await freePort();
  const profileDir = options.profile ? process.env.BENCH_CPU_PROF_DIR : undefined;
  const nodeArgs = profileDir
    ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`, `--cpu-prof-name=${name.replace(/[^A-Za-z0-9=]+/g, '-')}.cpuprofile`]
    : [];
  const child = startProcess(script, { ...env, DATABASE_URL: databaseUrl, PORT: String(port) }, nodeArgs);
  try {
    const url = `http://127.0.0.1:${port}`;
    await waitForHttp(`${url}/health/ready`, 60_000);
    process.stdout.write(`  ${name}: warming up 2 s, then ${settings.durationS} s of load... `);
    await load(url, 2);
    const warmRows = await countRows(databaseUrl);
    const result = await load(url, settings.durationS);
    const storedRows = (await countRows(databaseUrl)) - warmRows;
    const drainS = options.drain ? await drainSeconds(databaseUrl) : undefined;
    console.log('done');
    return {
      name,
      requestsPerSecond: result.requests.average,
      p50: result.latency.p50,
      p90: result.latency.p90,
      p99: result.latency.p99,
      max: result.latency.max,
      errors: result.errors + result.timeouts,
      non2xx: result.non2xx,
      accepted: result['2xx'],
      storedRows,
      drainS,
    };
  } finally {
    await stopProcess(child);
  }
}

function report(rows: Measured[]): void {
  const [baseline, ...services] = rows;
  const head = ['req/s', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms', 'errors', 'non-2xx', '2xx', 'rows'];
  console.log('');
  console.log(`Receive path: ${settings.connections} connections, ${settings.durationS} s, unique signed events over ${settings.posts} posts`);
  console.log(`${'receiver'.padEnd(34)}${head.map((h) => h.padStart(10)).join('')}`);
  for (const r of rows) {
    const cells = [r.requestsPerSecond, r.p50, r.p90, r.p99, r.max, r.errors, r.non2xx, r.accepted, r.storedRows];
    console.log(`${r.name.padEnd(34)}${cells.map((n, i) => cell(n, i >= 1 && i <= 4 ? 1 : 0)).join('')}`);
  }
  console.log('');
  for (const service of services) {
    // The goals: ROLE=api ahead of the bare receiver, ROLE=all (its worker sharing the process) level with it.
    const goal = service.name.includes('ROLE=api') ? 1.2 : 1.0;
    console.log(
      `${service.name}: ${(service.requestsPerSecond / baseline.requestsPerSecond).toFixed(2)}x the baseline's throughput ` +
        `(goal >= ${goal.toFixed(2)}x), p99 ${service.p99.toFixed(1)} ms = ${(service.p99 / baseline.p99).toFixed(2)}x the baseline's ` +
        `(goal <= 1.00x)`,
    );
    // Requests still in flight when the load stops are stored but not counted as answered, so rows >= 2xx.
    console.log(
      `  stored ${service.storedRows} rows for ${service.accepted} answered deliveries of unique events ` +
        `(${service.storedRows >= service.accepted ? 'none lost' : 'LOST EVENTS'})` +
        (service.drainS === undefined ? '' : `; the worker finished the reconcile backlog ${service.drainS.toFixed(1)} s after the load`),
    );
  }
}

/**
 * Runs the receive-path scenario on databases of `serverUrl` and prints its table. pozy-sync's worker (ROLE=all)
 * reads Pozy for every reconcile request: it reads a simulator in its own process (simulator-process.ts), never
 * the real Pozy API. It runs twice: with Pozy's default budget (600 requests a minute, what a workspace gets), and
 * with no budget (reads as fast as the worker can, 50 times what Pozy allows) to show the worker's own cost.
 */
export async function runReceiveScenario(serverUrl: string): Promise<void> {
  const baseline = await withDatabase(serverUrl, 'pozy_bench_baseline', (url) =>
    measure('baseline (Fastify + INSERT)', join(__dirname, 'baseline-receiver.js'), url, {}),
  );
  const simulatorPort = await freePort();
  const pozy = { POZY_API_URL: `http://127.0.0.1:${simulatorPort}`, POZY_API_KEY: 'sk_bench' };
  const simulator = startProcess(join(__dirname, 'simulator-process.js'), {
    ...pozy,
    PORT: String(simulatorPort),
    POZY_RATE_LIMIT_PER_MINUTE: String(SIMULATOR_RATE_LIMIT_PER_MINUTE),
  });
  try {
    await waitForHttp(pozy.POZY_API_URL, 30_000, { anyStatus: true });
    const service = (name: string, env: Record<string, string>, drain: boolean) =>
      withDatabase(serverUrl, 'pozy_bench_service', (url) =>
        measure(
          `pozy-sync (${name})`,
          BUILT_SERVICE,
          url,
          {
            ...pozy,
            POZY_WEBHOOK_SECRET: SECRET,
            HOST: '127.0.0.1',
            // As deployed: the default level logs one JSON line per request (to the bench's /dev/null).
            LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'log',
            LOG_FORMAT: 'json',
            ...(process.env.RECONCILE_COALESCE_WINDOW_MS ? { RECONCILE_COALESCE_WINDOW_MS: process.env.RECONCILE_COALESCE_WINDOW_MS } : {}),
            ...env,
          },
          { drain, profile: true },
        ),
      );
    const all = await service('ROLE=all', { ROLE: 'all' }, false);
    const unthrottled = await service(
      'ROLE=all, no API budget',
      {
        ROLE: 'all',
        POZY_RATE_LIMIT_PER_MINUTE: String(SIMULATOR_RATE_LIMIT_PER_MINUTE),
      },
      true,
    );
    const api = await service('ROLE=api', { ROLE: 'api' }, false);
    // Traces on, exported to a collector that takes everything: what a team pays for one trace per delivery.
    const collector = await startCollectorSink();
    const traced = await service('ROLE=api, traces on', { ROLE: 'api', OTEL_EXPORTER_OTLP_ENDPOINT: collector.url }, false).finally(() =>
      collector.close(),
    );
    report([baseline, all, unthrottled, api, traced]);
    console.log(
      `traces on: ${(traced.requestsPerSecond / api.requestsPerSecond).toFixed(2)}x the throughput of ROLE=api without them, ` +
        `p99 ${(traced.p99 / api.p99).toFixed(2)}x (${collector.exports()} OTLP exports received)`,
    );
  } finally {
    await stopProcess(simulator);
  }
}

/** An OTLP/HTTP endpoint on loopback that answers every export with 200 and keeps only their count. */
async function startCollectorSink(): Promise<{ url: string; exports: () => number; close: () => Promise<void> }> {
  let exports = 0;
  const server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      exports += 1;
      response.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, exports: () => exports, close: () => new Promise((resolve) => server.close(() => resolve())) };
}
