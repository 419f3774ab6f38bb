import { Client } from 'pg';

/**
 * Builds the secondary indexes of `tables` after `load` instead of row by row: several times faster for a million
 * rows. They are rebuilt from their own definitions, so the test reads the schema the migrations made.
 */
export async function withIndexesDeferred(client: Client, tables: string[], load: () => Promise<void>): Promise<void> {
  const { rows } = await client.query<{ name: string; definition: string }>(
    `SELECT i.indexname AS name, i.indexdef AS definition FROM pg_indexes i
      WHERE i.schemaname = 'public' AND i.tablename = ANY ($1)
        AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conname = i.indexname)`,
    [tables],
  );
  // Statistics targets set on index columns (ALTER INDEX ... SET STATISTICS) are not part of the definition.
  const { rows: targets } = await client.query<{ name: string; column: number; target: number }>(
    `SELECT c.relname AS name, a.attnum AS column, a.attstattarget AS target FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
      WHERE c.relname = ANY ($1) AND a.attstattarget >= 0`,
    [rows.map((index) => index.name)],
  );
  for (const index of rows) await client.query(`DROP INDEX "${index.name}"`);
  await load();
  for (const index of rows) await client.query(index.definition);
  for (const t of targets) await client.query(`ALTER INDEX "${t.name}" ALTER COLUMN ${t.column} SET STATISTICS ${t.target}`);
}

/**
 * `count` published posts that all hold "coffee" and "tea", never side by side: the phrase "coffee tea" matches none,
 * while `q=coffee` matches every one. Post `n`'s id is n in hex, padded.
 */
export function postsSharingTwoWords(count: number): string {
  return `
  INSERT INTO post (workspace_id, id, status, title, content, platforms, account_ids, platform_names, pozy_created_at, pozy_updated_at,
                    synced_at, read_started_at, read_id, sequence)
  SELECT 'default', lpad(to_hex(i), 24, '0'), 'published', 'Post ' || i,
         'Morning ' || i || ': coffee first, then a walk by the river, then tea with '
           || (ARRAY['milk','sugar','lemon'])[1 + i % 3] || '. ' || repeat('Words about the day and the weather ', 6),
         '[]'::jsonb, ARRAY[]::text[], ARRAY[]::text[], timestamptz '2025-06-01' + i * interval '1 second',
         timestamptz '2026-01-01' + i * interval '1 second', now(), now(), gen_random_uuid(), 1
    FROM generate_series(1, ${count}) AS i`;
}

/**
 * Runs `run` while another connection holds an ACCESS EXCLUSIVE lock on `table`, as a migration rewriting it would:
 * every read of the table waits until the lock goes, which is what a read that outlasts its statement timeout looks
 * like, however fast the machine. `ready`, when given, is polled (with the lock held) until it holds: on a streaming
 * replica, the lock arrives with the WAL.
 */
export async function whileTableLocked<T>(url: string, table: string, run: () => Promise<T>, ready?: () => Promise<boolean>): Promise<T> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('BEGIN');
    await client.query(`LOCK TABLE "${table}" IN ACCESS EXCLUSIVE MODE`);
    if (ready) {
      const deadline = Date.now() + 60_000;
      while (!(await ready())) {
        if (Date.now() > deadline) throw new Error(`Timed out after 60000 ms waiting for the lock on ${table} to be seen`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
    return await run();
  } finally {
    await client.query('ROLLBACK').catch(() => undefined);
    await client.end();
  }
}
