import type { Pool } from 'pg';
import { TableStatistics } from '../src/database/table-statistics';
import { createTestDatabase, TestDatabase } from './support/database';
import { recordingDatabase } from './support/explain';

describe('TableStatistics: when a table a run fills is analyzed', () => {
  let db: TestDatabase;
  let pool: Pool;
  let statistics: TableStatistics;

  beforeAll(async () => {
    db = await createTestDatabase('table_statistics');
    pool = db.pool(2);
    await pool.query('CREATE TABLE filled (id int PRIMARY KEY, body text)');
    statistics = new TableStatistics(recordingDatabase(pool).database);
  });

  afterAll(async () => {
    await pool?.end();
    await db?.drop();
  });

  let next = 0;
  /** Writes `n` rows, and makes its backend report them to the cumulative statistics at once (not within a second). */
  const write = async (n: number) => {
    const client = await pool.connect();
    try {
      await client.query(`INSERT INTO filled SELECT i, repeat('x', 200) FROM generate_series($1::int, $2::int) AS i`, [next + 1, next + n]);
      next += n;
      await client.query('SELECT pg_stat_force_next_flush()');
    } finally {
      client.release();
    }
  };
  const analyses = async () =>
    (await pool.query<{ n: number }>("SELECT analyze_count::int AS n FROM pg_stat_user_tables WHERE relname = 'filled'")).rows[0].n;

  it('analyzes after 1,000 rows written, then each time half its live rows have been written since; at the end, past a tenth', async () => {
    // Each step: rows written, then whether the page's check analyzed the table (live rows in brackets).
    const steps: Array<[number, boolean]> = [
      [600, false], // 600 written of 600 live: under 1,000
      [600, true], // 1,200 of 1,200
      [500, false], // 500 of 1,700: under 1,000
      [700, true], // 1,200 of 2,400: 1,000 and half
      [1_000, false], // 1,000 of 3,400: under half
      [1_400, true], // 2,400 of 4,800
    ];
    for (const [rows, analyzed] of steps) {
      const before = await analyses();
      await write(rows);
      await statistics.written(['filled']);
      expect({ after: next, analyzed: (await analyses()) > before }).toEqual({ after: next, analyzed });
    }
    // At the run's end, a tenth is enough: 300 of 5,100 is not, 300 more (600 of 5,400) is.
    await write(300);
    await statistics.settle(['filled']);
    expect(await analyses()).toBe(3);
    await write(300);
    await statistics.settle(['filled']);
    expect(await analyses()).toBe(4);
    // Nothing written since: nothing to do.
    await statistics.settle(['filled']);
    expect(await analyses()).toBe(4);
  });

  it('at the end, analyzes a table never analyzed however few its rows, and leaves one nothing was written to', async () => {
    await pool.query('CREATE TABLE small (id int PRIMARY KEY)');
    await pool.query('CREATE TABLE untouched (id int PRIMARY KEY)');
    const client = await pool.connect();
    try {
      await client.query('INSERT INTO small SELECT generate_series(1, 40)');
      await client.query('SELECT pg_stat_force_next_flush()');
    } finally {
      client.release();
    }
    await statistics.settle(['small', 'untouched']);
    const { rows } = await pool.query<{ relname: string; n: number }>(
      "SELECT relname, analyze_count::int AS n FROM pg_stat_user_tables WHERE relname IN ('small', 'untouched') ORDER BY relname",
    );
    expect(rows).toEqual([
      { relname: 'small', n: 1 },
      { relname: 'untouched', n: 0 },
    ]);
  });

  it('at the end, analyzes a table whose file grew by a tenth though its backend has not reported the rows yet', async () => {
    await pool.query('CREATE TABLE late (id int PRIMARY KEY, body text)');
    const client = await pool.connect();
    try {
      await client.query(`INSERT INTO late SELECT i, repeat('x', 200) FROM generate_series(1, 2000) AS i`);
      await client.query('SELECT pg_stat_force_next_flush()');
      await statistics.settle(['late']);
      // Reported within a second of the last report at the earliest: these 2,000 rows are still this backend's own.
      await client.query(`INSERT INTO late SELECT i, repeat('x', 200) FROM generate_series(2001, 4000) AS i`);
      await statistics.settle(['late']);
    } finally {
      client.release();
    }
    const { rows } = await pool.query<{ n: number; reltuples: number }>(
      `SELECT s.analyze_count::int AS n, c.reltuples::float8 AS reltuples
         FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid WHERE s.relname = 'late'`,
    );
    expect(rows).toEqual([{ n: 2, reltuples: 4000 }]);
  });

  it('at the end, analyzes the due tables at once, and returns only when every one is analyzed', async () => {
    await pool.query('CREATE TABLE a_blocked (id int PRIMARY KEY, body text); CREATE TABLE b_free (id int PRIMARY KEY, body text)');
    for (const table of ['a_blocked', 'b_free']) {
      await pool.query(`INSERT INTO ${table} SELECT i, repeat('x', 200) FROM generate_series(1, 2000) AS i; SELECT pg_stat_force_next_flush()`);
    }
    const count = async (table: string) =>
      (await pool.query<{ n: number }>('SELECT analyze_count::int AS n FROM pg_stat_user_tables WHERE relname = $1', [table])).rows[0].n;
    // A_blocked comes first by name: taken one after the other, b_free would wait for it. The lock conflicts with
    // ANALYZE and is released before the ANALYZE's own lock_timeout (1 s) gives up.
    // A pool of its own: a connection for each table's ANALYZE, besides the test's and the lock's.
    const wide = db.pool(4);
    const atOnce = new TableStatistics(recordingDatabase(wide).database);
    const locker = await pool.connect();
    let settled = false;
    let settling: Promise<void> | undefined;
    try {
      await locker.query('BEGIN; LOCK TABLE a_blocked IN SHARE UPDATE EXCLUSIVE MODE');
      settling = atOnce.settle(['a_blocked', 'b_free']).then(() => {
        settled = true;
      });
      const deadline = Date.now() + 800;
      while ((await count('b_free')) === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
      expect({ bFree: await count('b_free'), aBlocked: await count('a_blocked'), settled }).toEqual({ bFree: 1, aBlocked: 0, settled: false });
    } finally {
      await locker.query('COMMIT');
      locker.release();
      await settling;
      await wide.end();
    }
    expect({ bFree: await count('b_free'), aBlocked: await count('a_blocked') }).toEqual({ bFree: 1, aBlocked: 1 });
  });

  it('at the end of a run that wrote under a tenth of a table, leaves it to the rule during runs (other runs filled it)', async () => {
    await pool.query('CREATE TABLE shared (id int PRIMARY KEY, body text)');
    const client = await pool.connect();
    const count = async () =>
      (await pool.query<{ n: number }>("SELECT analyze_count::int AS n FROM pg_stat_user_tables WHERE relname = 'shared'")).rows[0].n;
    try {
      await client.query(`INSERT INTO shared SELECT i, repeat('x', 200) FROM generate_series(1, 5000) AS i`);
      await client.query('SELECT pg_stat_force_next_flush()');
      await statistics.settle(['shared'], 5_000);
      expect(await count()).toBe(1);
      // 1,000 more rows, a fifth of the table: due by the table's own figures, but this run wrote 200 of them.
      await client.query(`INSERT INTO shared SELECT i, repeat('x', 200) FROM generate_series(5001, 6000) AS i`);
      await client.query('SELECT pg_stat_force_next_flush()');
      await statistics.settle(['shared'], 200);
      expect(await count()).toBe(1);
      // A run that wrote a tenth of the 6,000 rows itself leaves it analyzed.
      await statistics.settle(['shared'], 600);
      expect(await count()).toBe(2);
    } finally {
      client.release();
    }
  });
});
