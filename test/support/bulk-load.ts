import type { Client } from 'pg';

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
