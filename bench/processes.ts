/** What the bench's scenarios share: child processes, scratch databases, percentiles, table cells. */
import { ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { Client, Pool } from 'pg';
import { freePort } from './net';

/** The built service, `npm run build`'s dist/main.js, seen from this file built into dist-tools/bench/. */
export const BUILT_SERVICE = join(__dirname, '..', '..', 'dist', 'main.js');

/** Runs `script` with Node (and `nodeArgs`) and only the given environment (plus PATH); its stderr goes to the bench's. */
export function startProcess(script: string, env: Record<string, string>, nodeArgs: string[] = []): ChildProcess {
  return spawn(process.execPath, [...nodeArgs, script], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', process.env.BENCH_LOG_LEVEL ? 'inherit' : 'ignore', 'inherit'],
  });
}

/** The bench's simulated Pozy, as the service is pointed at it. */
export interface BenchPozy {
  url: string;
  apiKey: string;
  webhookSecret: string;
  ratePerMinute: number;
}

/**
 * The built service (ROLE=all) on a free loopback port against the bench's simulated Pozy, with what every scenario
 * wants: warnings only, no scheduled backfill. `env` adds to that or overrides it.
 */
export async function startBuiltService(
  databaseUrl: string,
  pozy: BenchPozy,
  env: Record<string, string> = {},
  nodeArgs: string[] = [],
): Promise<{ child: ChildProcess; url: string }> {
  const port = await freePort();
  const child = startProcess(
    BUILT_SERVICE,
    {
      DATABASE_URL: databaseUrl,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      ROLE: 'all',
      POZY_API_URL: pozy.url,
      POZY_API_KEY: pozy.apiKey,
      POZY_WEBHOOK_SECRET: pozy.webhookSecret,
      POZY_RATE_LIMIT_PER_MINUTE: String(pozy.ratePerMinute),
      BACKFILL_CRON: 'off',
      ...env,
    },
    nodeArgs,
  );
  return { child, url: `http://127.0.0.1:${port}` };
}

export async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

/** A fresh database `name` on the server for the duration of `run`, dropped afterwards. */
export async function withDatabase<T>(serverUrl: string, name: string, run: (url: string) => Promise<T>): Promise<T> {
  const admin = new Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  try {
    return await run(url.toString());
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  }
}

/** Nearest-rank percentile (`p` in [0, 100]) of the values; NaN when there are none. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1];
}

export const median = (values: readonly number[]) => percentile(values, 50);

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A right-aligned table cell; `-` for NaN. */
export function cell(n: number, digits = 0, width = 10): string {
  return (Number.isFinite(n) ? n.toFixed(digits) : n === Infinity ? 'never' : '-').padStart(width);
}

/** Serves a bench receiver on loopback until SIGTERM/SIGINT, then closes it and its pool and exits 0. */
export async function serveUntilStopped(app: FastifyInstance, pool: Pool, port: number): Promise<void> {
  app.get('/health/ready', async () => ({ status: 'ok' }));
  await app.listen({ port, host: '127.0.0.1' });
  const stop = () =>
    void app
      .close()
      .then(() => pool.end())
      .then(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

/** An integer setting of the bench from the environment (`fallback` when unset), at least `min`; anything else stops the run. */
export function intSetting(name: string, fallback: number, min = 1): number {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isInteger(value) || value < min) {
    const rule = min === 1 ? 'a positive integer' : min === 0 ? 'a non-negative integer' : `an integer of at least ${min}`;
    throw new Error(`${name} must be ${rule}`);
  }
  return value;
}
