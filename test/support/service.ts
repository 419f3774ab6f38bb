import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { Pool } from 'pg';
import type { DestinationStream } from 'pino';
import { createApp } from '../../src/app.factory';
import { AppConfig } from '../../src/config/app-config';
import { DatabaseService } from '../../src/database/database.service';
import { testLog } from './test-log';

export const TEST_WEBHOOK_SECRET = 'whsec_test_5e3b9c';

export interface RunningService {
  app: NestFastifyApplication;
  baseUrl: string;
  pool: Pool;
  close(): Promise<void>;
}

/** The whole service, as main.ts builds it, listening on a loopback port. */
export async function startService(
  databaseUrl: string,
  env: Record<string, string | undefined> = {},
  /** A port chosen beforehand (e.g. one PUBLIC_URL names); default: any free one. */
  port = 0,
  /** Where the service's log lines go (a test that reads them); default: kept, and printed if the test fails. */
  logDestination: DestinationStream = testLog,
): Promise<RunningService> {
  const config = AppConfig.fromEnvironment({
    DATABASE_URL: databaseUrl,
    POZY_API_KEY: 'sk_test_key',
    // A test that gives no Pozy never reaches the real one: a closed loopback port refuses at once.
    POZY_API_URL: 'http://127.0.0.1:9',
    POZY_WEBHOOK_SECRET: TEST_WEBHOOK_SECRET,
    DATABASE_POOL_SIZE: '10',
    // Failures only, and those printed only for a test that fails (test/support/test-log.ts).
    LOG_LEVEL: 'error',
    // Tests start a backfill, or an import, when they mean to.
    BACKFILL_CRON: 'off',
    INITIAL_IMPORT: 'off',
    // A spool of its own: test files run in parallel.
    SPOOL_DIR: mkdtempSync(join(tmpdir(), 'pozy-spool-')),
    // The most a receiver may wait for a busy test database (the suites run side by side on few cores), so that an
    // event is answered stored, as tests expect, unless a test makes the database slower; a spooled one is retried
    // soon. The spool's own tests set both.
    ACK_TIMEOUT_MS: '4500',
    SPOOL_RETRY_FIRST_MS: '1000',
    // The tests' subscribers listen on loopback, which is refused unless allowed.
    NOTIFY_ALLOWED_HOSTS: '127.0.0.1',
    ...env,
  });
  const app = await createApp(config, { logDestination });
  await app.listen({ port, host: '127.0.0.1' });
  const address = app.getHttpServer().address();
  if (typeof address !== 'object' || !address) throw new Error('service is not listening');
  return {
    app,
    baseUrl: `http://127.0.0.1:${address.port}`,
    pool: app.get(DatabaseService).pool,
    close: () => app.close(),
  };
}

/** Polls `check` until it returns a value other than undefined, or fails after `timeoutMs`. */
export async function waitFor<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 15_000, intervalMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
