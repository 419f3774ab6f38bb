import { randomBytes } from 'node:crypto';
import { Client, Pool } from 'pg';

export interface TestDatabase {
  url: string;
  name: string;
  /**
   * A pool of the test's own (to look at rows directly), ended by the test before `drop`. A connection it holds idle
   * that the server ends is logged, not thrown: without a listener, pg throws it in whatever test runs then.
   */
  pool(max: number): Pool;
  drop(): Promise<void>;
}

function serverUrl(): string {
  const url = process.env.TEST_DATABASE_URL;
  if (!url) throw new Error('TEST_DATABASE_URL is not set (test/support/global-setup.ts sets it)');
  return url;
}

async function admin<T>(run: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: serverUrl() });
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}

/** A fresh, empty database on the test server; the service's own migrator sets it up. */
export async function createTestDatabase(label: string): Promise<TestDatabase> {
  const name = `pozy_test_${label.replace(/[^a-z0-9]/gi, '_').toLowerCase()}_${randomBytes(4).toString('hex')}`;
  await admin((client) => client.query(`CREATE DATABASE "${name}"`));
  const url = new URL(serverUrl());
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    pool: (max) => {
      const pool = new Pool({ connectionString: url.toString(), max });
      pool.on('error', (error) => process.stderr.write(`${name}: an idle connection of the test's own pool failed: ${error.message}\n`));
      return pool;
    },
    drop: () => admin((client) => client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)).then(() => undefined),
  };
}
