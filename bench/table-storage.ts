/**
 * Bytes on disk per table, as PostgreSQL counts them: what the storage scenario (storage.ts) prints, and what a test
 * or an operator's script can call on any database of pozy-sync's.
 *
 *   heap     the table's own file: main fork, free space map and visibility map (pg_table_size less TOAST)
 *   toast    its TOAST table and the TOAST table's index (values over about 2 kB, compressed or moved out of line)
 *   indexes  every index of the table (pg_indexes_size)
 *   total    pg_total_relation_size: heap + toast + indexes
 *
 * Sizes are files, not live rows: after updates and deletes a plain VACUUM marks the dead rows' space free for the
 * table's next rows but gives it back to the operating system only at the file's end. `vacuumTables` runs
 * `VACUUM (ANALYZE)` so that a measurement reads settled files, and reports no bloat that a live system's
 * autovacuum would have reclaimed for reuse.
 */
import type { ClientBase, Pool } from 'pg';

export interface TableStorage {
  table: string;
  /** Live rows (an exact count). */
  rows: number;
  heap: number;
  toast: number;
  indexes: number;
  total: number;
}

export interface IndexStorage {
  index: string;
  bytes: number;
}

type Queryable = Pick<ClientBase, 'query'> | Pick<Pool, 'query'>;

const quoted = (name: string) => `"${name.replace(/"/g, '""')}"`;

/** The tables of `schema` (default: the connection's current schema), by name. */
export async function schemaTables(db: Queryable, schema?: string): Promise<string[]> {
  const { rows } = await db.query<{ table: string }>(
    `SELECT c.relname AS table FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = coalesce($1, current_schema()) AND c.relkind IN ('r', 'p') ORDER BY 1`,
    [schema ?? null],
  );
  return rows.map((row) => row.table);
}

/** `VACUUM (ANALYZE)` of each table, one after the other (VACUUM cannot run inside a transaction block). */
export async function vacuumTables(db: Queryable, tables: readonly string[]): Promise<void> {
  for (const table of tables) await db.query(`VACUUM (ANALYZE) ${quoted(table)}`);
}

/** Heap, TOAST, indexes and total bytes, and live rows, of each table of the current schema named (in that order). */
export async function tableStorage(db: Queryable, tables: readonly string[]): Promise<TableStorage[]> {
  const { rows } = await db.query<{ table: string; heap: string; toast: string; indexes: string; total: string }>(
    `SELECT c.relname AS table,
            pg_table_size(c.oid) - coalesce(pg_total_relation_size(nullif(c.reltoastrelid, 0)), 0) AS heap,
            coalesce(pg_total_relation_size(nullif(c.reltoastrelid, 0)), 0) AS toast,
            pg_indexes_size(c.oid) AS indexes,
            pg_total_relation_size(c.oid) AS total
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = current_schema() AND c.relname = ANY($1::text[])`,
    [tables],
  );
  const byName = new Map(rows.map((row) => [row.table, row]));
  const result: TableStorage[] = [];
  for (const table of tables) {
    const row = byName.get(table);
    if (!row) throw new Error(`tableStorage: no table ${table} in the current schema`);
    const count = await db.query<{ n: string }>(`SELECT count(*) AS n FROM ${quoted(table)}`);
    result.push({
      table,
      rows: Number(count.rows[0].n),
      heap: Number(row.heap),
      toast: Number(row.toast),
      indexes: Number(row.indexes),
      total: Number(row.total),
    });
  }
  return result;
}

/** Each index of `table` (current schema) with its bytes, largest first. */
export async function indexStorage(db: Queryable, table: string): Promise<IndexStorage[]> {
  const { rows } = await db.query<{ index: string; bytes: string }>(
    `SELECT i.relname AS index, pg_relation_size(i.oid) AS bytes
       FROM pg_index x
       JOIN pg_class t ON t.oid = x.indrelid
       JOIN pg_class i ON i.oid = x.indexrelid
       JOIN pg_namespace n ON n.oid = t.relnamespace
      WHERE n.nspname = current_schema() AND t.relname = $1
      ORDER BY 2 DESC, 1`,
    [table],
  );
  return rows.map((row) => ({ index: row.index, bytes: Number(row.bytes) }));
}

/** The sum of the tables' sizes, field by field (`table` names them all). */
export function sumStorage(tables: readonly TableStorage[], name = tables.map((t) => t.table).join(' + ')): TableStorage {
  const total: TableStorage = { table: name, rows: 0, heap: 0, toast: 0, indexes: 0, total: 0 };
  for (const t of tables) {
    total.rows += t.rows;
    total.heap += t.heap;
    total.toast += t.toast;
    total.indexes += t.indexes;
    total.total += t.total;
  }
  return total;
}
