import { Logger } from '@nestjs/common';
import { EmbeddedDatabase } from '../../src/database/embedded-postgres';
import { freePort } from './ports';

declare global {
  var __EMBEDDED_TEST_DATABASE__: EmbeddedDatabase | undefined;
}

/**
 * Where the tests' PostgreSQL comes from: TEST_DATABASE_URL when set (CI points it at the machine's server);
 * otherwise an embedded PostgreSQL started once for the run, so `npm test` needs no database installed.
 * Each test file then creates its own database on that server.
 */
export default async function globalSetup(): Promise<void> {
  if (process.env.TEST_DATABASE_URL) return;
  // PostgreSQL's own log lines (verbose) would drown the test report.
  Logger.overrideLogger(['error', 'warn', 'log']);
  const embedded = await EmbeddedDatabase.start({
    dataDir: '.data/test-postgres',
    port: await freePort(),
    database: 'postgres',
  });
  globalThis.__EMBEDDED_TEST_DATABASE__ = embedded;
  // Workers are spawned after global setup and inherit this.
  process.env.TEST_DATABASE_URL = embedded.url;
}
