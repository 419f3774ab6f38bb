import { CompiledQuery, type Kysely } from 'kysely';

/**
 * PostgreSQL's planner's estimate of the rows each query answers, without running any of them (EXPLAIN).
 * It comes from the table's statistics (ANALYZE, autovacuum) scaled to the table's size on disk now, so it follows
 * a growing table between two analyses. The planner never estimates fewer than one row.
 * The queries are explained one after another on `db` (a connection, a transaction), with their parameters.
 */
export async function plannerRows<DB>(db: Kysely<DB>, queries: readonly CompiledQuery[]): Promise<number[]> {
  const rows: number[] = [];
  for (const query of queries) {
    const plan = await db.executeQuery<Record<string, unknown>>(CompiledQuery.raw(`EXPLAIN (FORMAT JSON) ${query.sql}`, [...query.parameters]));
    rows.push(planRows(plan.rows));
  }
  return rows;
}

/** The root node's `Plan Rows` of `EXPLAIN (FORMAT JSON)`'s one row: `[{ "QUERY PLAN": [{ "Plan": {...} }] }]`. */
function planRows(answer: readonly Record<string, unknown>[]): number {
  const plans = answer[0]?.['QUERY PLAN'];
  const plan: unknown = Array.isArray(plans) ? (plans[0] as unknown) : undefined;
  const node = isRecord(plan) ? plan.Plan : undefined;
  const rows = isRecord(node) ? node['Plan Rows'] : undefined;
  if (typeof rows !== 'number') throw new Error('EXPLAIN (FORMAT JSON) answered no Plan Rows');
  return Math.round(rows);
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null;
