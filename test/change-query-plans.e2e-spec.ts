import { Client, type Pool } from 'pg';
import { ChangeFilter, ChangeRepository } from '../src/changes/change.repository';
import type { DatabaseService } from '../src/database/database.service';
import { withIndexesDeferred } from './support/bulk-load';
import { createTestDatabase, TestDatabase } from './support/database';
import { explainAnalyzed, pagesTouched, recordingDatabase, rowsVisitedIn, SentStatement } from './support/explain';
import { startService } from './support/service';

const CHANGES = 200_000;

/**
 * 200,000 placed entries, position n for entry n, each carrying a post's whole JSON as the feed does: the workspace
 * `small` has one in 200 (n % 200 = 0), `busy` the rest; post.changed but for post.deleted on one in 50 and
 * account.removed never; profile n % 20, platform instagram.
 */
const LOAD = `
  INSERT INTO change (workspace_id, id, position, type, resource_id, sequence, changed_at, profile_ids, platforms, data)
  SELECT CASE WHEN n % 200 = 0 THEN 'small' ELSE 'busy' END, n, n,
         CASE WHEN n % 50 = 7 THEN 'post.deleted' ELSE 'post.changed' END, lpad(to_hex(n), 24, '0'), 1, now(),
         ARRAY['prof' || (n % 20)], ARRAY['instagram'],
         jsonb_build_object('id', lpad(to_hex(n), 24, '0'), 'status', 'published', 'content', repeat('Words of a post ', 40))
    FROM generate_series(1, ${CHANGES}) AS n`;

/** The window a filtered read looks at past its cursor (ChangesService's FILTERED_SCAN). */
const SCAN = 10_000;

/** [name, filter, entries in the page, most change rows visited, most pages touched] */
const BOUNDED: Array<[string, ChangeFilter, number, number, number]> = [
  // The window's 50 entries of the small workspace, found through its key, not the window's 10,000 of both.
  ['a small workspace beside a busy one', { workspaces: ['small'] }, 50, 200, 200],
  ['a small workspace, post.deleted', { workspaces: ['small'], types: ['post.deleted'] }, 0, 200, 200],
  // Unscoped filters look at the window alone (and the feed's two bounds): bounded by it, whatever they match.
  ['a type no entry has', { types: ['account.removed'] }, 0, SCAN + 2, 3_000],
  ['a platform no entry has', { platform: 'linkedin' }, 0, SCAN + 2, 3_000],
  ['a profile (one entry in 20)', { profileId: 'prof3' }, 100, SCAN + 2, 3_000],
  ['a profile no entry has', { profileId: 'prof-none' }, 0, SCAN + 2, 3_000],
  ['post.deleted (one entry in 50)', { types: ['post.deleted'] }, 100, SCAN + 2, 3_000],
];

const readsOfChanges = (statements: SentStatement[]) => statements.filter(({ statement }) => /from "change"/i.test(statement.sql));

describe('GET /changes on 200,000 entries: a filtered read visits a bounded number of entries', () => {
  let db: TestDatabase;
  let pool: Pool;
  let sent: () => SentStatement[];
  let changes: ChangeRepository;
  let database: DatabaseService;

  beforeAll(async () => {
    db = await createTestDatabase('change_plans');
    await (await startService(db.url, { ROLE: 'api' })).close();
    const client = new Client({ connectionString: db.url });
    await client.connect();
    try {
      await withIndexesDeferred(client, ['change'], async () => {
        await client.query(LOAD);
      });
      await client.query('VACUUM ANALYZE change');
    } finally {
      await client.end();
    }
    pool = db.pool(2);
    const recording = recordingDatabase(pool);
    sent = recording.sent;
    database = recording.database;
    changes = new ChangeRepository(database);
  }, 600_000);

  afterAll(async () => {
    await pool?.end();
    await db?.drop();
  });

  it.each(BOUNDED)('%s', async (name, filter, entries, maxRows, maxPages) => {
    // A cursor in the middle of the feed, as a reader following it has.
    const read = await changes.page(database.db, '100000', 100, SCAN, filter);
    expect(read.rows.length).toBe(entries);
    const report: string[] = [];
    for (const statement of readsOfChanges(sent())) {
      const { plan } = await explainAnalyzed(pool, statement);
      const rows = rowsVisitedIn(plan, 'change');
      const pages = pagesTouched(plan);
      report.push(`${rows} rows, ${pages} pages`);
      expect(rows).toBeLessThanOrEqual(maxRows);
      expect(pages).toBeLessThanOrEqual(maxPages);
    }
    process.stdout.write(`  ${name.padEnd(40)} ${report.join('; ')}\n`);
  });
});
