import { Client } from 'pg';
import { parseDatabaseUrl } from '../src/config/database-url';
import { DiscardCause, FailoverPool, WrongServerError } from '../src/database/failover-pool';
import { createTestDatabase, TestDatabase } from './support/database';
import { freePort } from './support/ports';

/** The pool every write path uses, against a real server: the check at connect, the hosts in turn, and doomed connections. */
describe('FailoverPool', () => {
  let database: TestDatabase;
  let readOnlyUrl: string;
  const role = `pozy_read_only_${process.pid}`;
  const discards: Array<{ pool: string; cause: DiscardCause }> = [];
  const observer = { discarded: (pool: string, cause: DiscardCause) => void discards.push({ pool, cause }) };

  beforeAll(async () => {
    database = await createTestDatabase('failover_pool');
    const admin = new Client({ connectionString: database.url });
    await admin.connect();
    // A role whose sessions start read-only: what a standby, or a primary set read-only, reports at connect.
    await admin.query(`DROP ROLE IF EXISTS ${role}`);
    await admin.query(`CREATE ROLE ${role} LOGIN SUPERUSER`);
    await admin.query(`ALTER ROLE ${role} SET default_transaction_read_only = on`);
    await admin.query('CREATE TABLE written (n int)');
    await admin.end();
    const url = new URL(database.url);
    url.username = role;
    readOnlyUrl = url.toString();
  });

  afterEach(() => {
    discards.length = 0;
  });

  afterAll(async () => {
    await database.drop();
    const admin = new Client({ connectionString: process.env.TEST_DATABASE_URL });
    await admin.connect();
    await admin.query(`DROP ROLE IF EXISTS ${role}`);
    await admin.end();
  });

  const pool = (url: string, attrs: 'read-write' | 'any' = 'read-write') =>
    new FailoverPool({ endpoint: parseDatabaseUrl(url, attrs), name: 'test', observer, max: 2, connectionTimeoutMillis: 2_000 });

  it('refuses a read-only server for a pool that writes, from what the server reported at connect', async () => {
    const readOnly = pool(readOnlyUrl);
    try {
      await expect(readOnly.query('SELECT 1')).rejects.toThrow(WrongServerError);
      await expect(readOnly.query('SELECT 1')).rejects.toMatchObject({ code: '25006' });
      expect(readOnly.totalCount).toBe(0);
      expect(discards.filter((d) => d.cause === 'wrong_server').length).toBe(2);
    } finally {
      await readOnly.end();
    }
  });

  it('takes the same server with target_session_attrs=any', async () => {
    const any = pool(readOnlyUrl, 'any');
    try {
      expect((await any.query<{ one: number }>('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    } finally {
      await any.end();
    }
  });

  it('tries the hosts in order, past one that refuses connections, and stays on the one that answered', async () => {
    const closed = await freePort();
    const good = new URL(database.url);
    const multi = pool(`postgresql://${good.username}@127.0.0.1:${closed},${good.host}${good.pathname}`);
    try {
      expect((await multi.query<{ port: number }>('SELECT inet_server_port() AS port')).rows[0].port).toBe(Number(good.port || 5432));
      // Sticky: the next new connections go straight to the host that answered.
      const [a, b] = [await multi.connect(), await multi.connect()];
      a.release();
      b.release();
      expect(multi.totalCount).toBe(2);
    } finally {
      await multi.end();
    }
  });

  it('destroys, rather than returns, a connection that failed with a read-only SQLSTATE, though released without an error', async () => {
    const writes = pool(database.url);
    try {
      const client = await writes.connect();
      const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      await client.query('SET default_transaction_read_only = on');
      await expect(client.query('INSERT INTO written VALUES (1)')).rejects.toMatchObject({ code: '25006' });
      client.release();
      expect(discards).toEqual([{ pool: 'test', cause: 'server_error' }]);
      const next = await writes.connect();
      const again = await next.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      await next.query('INSERT INTO written VALUES (2)');
      next.release();
      expect(again.rows[0].pid).not.toBe(rows[0].pid);
    } finally {
      await writes.end();
    }
  });

  it('drops idle connections made before a failover at their next checkout', async () => {
    const writes = pool(database.url);
    try {
      const client = await writes.connect();
      const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      client.release();
      expect(writes.discardOlderThan(Date.now() + 1, 'the primary changed')).toBe(1);
      const next = await writes.connect();
      const again = await next.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      next.release();
      expect(again.rows[0].pid).not.toBe(rows[0].pid);
      expect(discards).toEqual([{ pool: 'test', cause: 'failover' }]);
    } finally {
      await writes.end();
    }
  });
});
