import { Client, type Pool } from 'pg';
import { AccountsQuery } from '../src/mirror/accounts/accounts.query';
import type { ListAccountsQuery } from '../src/mirror/accounts/dto/list-accounts.query';
import { withIndexesDeferred } from './support/bulk-load';
import { createTestDatabase, TestDatabase } from './support/database';
import { explainAnalyzed, pagesTouched, planNodes, recordingDatabase, rowsVisitedIn, SentStatement } from './support/explain';
import { startService } from './support/service';

const ACCOUNTS = 100_000;

/**
 * 100,000 accounts (far more than a workspace holds, so that a walk of them all shows), 100 a profile, on four
 * platforms by n % 4; inactive when n % 200 = 0 and waiting for a reconnection when n % 300 = 1 (together about one in
 * 120 not connected), disabled when n % 500 = 3, removed when n % 50 = 25.
 */
const LOAD = `
  INSERT INTO account (workspace_id, id, profile_id, platform, username, display_name, is_active, needs_reconnection, enabled,
                       removed_at, synced_at, read_started_at, read_id, sequence)
  SELECT 'default', 'acct' || lpad(n::text, 20, '0'), 'prof' || lpad((n % 1000)::text, 20, '0'),
         (ARRAY['linkedin','twitter','instagram','facebook'])[1 + n % 4], 'user' || n, 'User ' || n,
         n % 200 <> 0, n % 300 = 1, n % 500 <> 3, CASE WHEN n % 50 = 25 THEN now() END,
         now(), now(), gen_random_uuid(), 1
    FROM generate_series(1, ${ACCOUNTS}) AS n`;

/** Profile 1's accounts (n % 1000 = 1) are all on twitter. */
const PROFILE_1 = 'prof' + '1'.padStart(20, '0');

/** [name, shape, accounts on the first page, most account rows visited, most pages touched] */
const BOUNDED: Array<[string, Partial<ListAccountsQuery>, number, number, number]> = [
  ['no filter', {}, 50, 300, 100],
  ['platform, none', { platform: 'tiktok' }, 0, 10, 20],
  ['platform', { platform: 'linkedin' }, 50, 300, 200],
  ['connected=false', { connected: false }, 50, 300, 200],
  ['connected=false + platform, none', { connected: false, platform: 'tiktok' }, 0, 2_000, 200],
  ['connected=true', { connected: true }, 50, 300, 200],
  ['enabled=false', { enabled: false }, 50, 300, 200],
  ['enabled=false + includeRemoved', { enabled: false, includeRemoved: true }, 50, 300, 200],
  ['profileId + platform, none', { profileId: PROFILE_1, platform: 'linkedin' }, 0, 300, 200],
  ['profileId', { profileId: PROFILE_1 }, 50, 300, 200],
  ['q, a common part of the username', { q: 'user1' }, 50, 1_000, 500],
];

/** The statements that read the account table. */
const readsOfAccounts = (statements: SentStatement[]) => statements.filter(({ statement }) => /from "account"/i.test(statement.sql));

describe('GET /accounts on 100,000 accounts: a filter that matches few or none reads a bounded number of rows', () => {
  let db: TestDatabase;
  let pool: Pool;
  let sent: () => SentStatement[];
  let accounts: AccountsQuery;

  beforeAll(async () => {
    db = await createTestDatabase('account_plans');
    // The service's own migrations make the schema.
    await (await startService(db.url, { ROLE: 'api' })).close();
    const client = new Client({ connectionString: db.url });
    await client.connect();
    try {
      await withIndexesDeferred(client, ['account'], async () => {
        await client.query(LOAD);
      });
      await client.query('VACUUM ANALYZE account');
    } finally {
      await client.end();
    }
    pool = db.pool(2);
    const recording = recordingDatabase(pool);
    sent = recording.sent;
    accounts = new AccountsQuery(recording.database);
  }, 600_000);

  afterAll(async () => {
    await pool?.end();
    await db?.drop();
  });

  it.each(BOUNDED)('%s: first page and a page after a cursor', async (name, shape, page, maxRows, maxPages) => {
    const first = await accounts.list({ limit: 50, ...shape });
    expect(first.data.length).toBe(page);
    if (first.nextCursor) await accounts.list({ limit: 50, ...shape, cursor: first.nextCursor });
    const report: string[] = [];
    for (const statement of readsOfAccounts(sent())) {
      const { plan } = await explainAnalyzed(pool, statement);
      const rows = rowsVisitedIn(plan, 'account');
      const pages = pagesTouched(plan);
      report.push(`${rows} rows, ${pages} pages`);
      expect(planNodes(plan).filter((node) => node['Node Type'] === 'Seq Scan' && node['Relation Name'] === 'account')).toEqual([]);
      expect(rows).toBeLessThanOrEqual(maxRows);
      expect(pages).toBeLessThanOrEqual(maxPages);
    }
    process.stdout.write(`  ${name.padEnd(40)} ${report.join('; ')}\n`);
  });
});
