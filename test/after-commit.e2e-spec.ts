import { Kysely, PostgresDialect, sql } from 'kysely';
import type { Pool } from 'pg';
import { afterCommit, transaction } from '../src/database/after-commit';
import type { Db } from '../src/database/database.service';
import { createTestDatabase, TestDatabase } from './support/database';

describe('afterCommit: what a write tells the process runs once its rows are committed', () => {
  let db: TestDatabase;
  let pool: Pool;
  let kysely: Db;
  // What another connection sees of the table when a hook runs.
  const seen = async () => (await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM written')).rows[0].n;

  beforeAll(async () => {
    db = await createTestDatabase('after_commit');
    pool = db.pool(3);
    kysely = new Kysely({ dialect: new PostgresDialect({ pool }) });
    await pool.query('CREATE TABLE written (id int PRIMARY KEY)');
  });

  afterAll(async () => {
    await kysely?.destroy();
    await db?.drop();
  });

  beforeEach(() => pool.query('TRUNCATE written'));

  const insert = (into: Db, id: number) => sql`INSERT INTO written VALUES (${id})`.execute(into);

  it('runs the hooks of a transaction in order once it has committed, each seeing its rows from another connection', async () => {
    const ran: Array<{ hook: number; rows: number }> = [];
    const pendingChecks: Array<Promise<void>> = [];
    const answer = await transaction(kysely, async (trx) => {
      await insert(trx, 1);
      afterCommit(trx, () => pendingChecks.push(seen().then((rows) => void ran.push({ hook: 1, rows }))));
      await insert(trx, 2);
      afterCommit(trx, () => pendingChecks.push(seen().then((rows) => void ran.push({ hook: 2, rows }))));
      expect(pendingChecks).toEqual([]);
      return 'done';
    });
    await Promise.all(pendingChecks);
    expect(answer).toBe('done');
    expect(ran).toEqual([
      { hook: 1, rows: 2 },
      { hook: 2, rows: 2 },
    ]);
  });

  it('runs none of them when the transaction fails', async () => {
    let ran = 0;
    await expect(
      transaction(kysely, async (trx) => {
        await insert(trx, 1);
        afterCommit(trx, () => (ran += 1));
        await insert(trx, 1);
      }),
    ).rejects.toThrow(/duplicate key/);
    expect(ran).toBe(0);
    expect(await seen()).toBe(0);
  });

  it('runs a hook at once outside a transaction, its statement having committed already', async () => {
    await insert(kysely, 1);
    let ran = false;
    afterCommit(kysely, () => (ran = true));
    expect(ran).toBe(true);
    expect(await seen()).toBe(1);
  });

  it('refuses a transaction it was not told of, which nothing would run the hook after', async () => {
    await expect(
      kysely.transaction().execute(async (trx) => {
        afterCommit(trx, () => undefined);
      }),
    ).rejects.toThrow(/not opened with transaction\(\)/);
  });
});
