import type { Explainable } from 'kysely';

/**
 * PostgreSQL's planner's estimate of the rows each query answers, without running any of them (EXPLAIN).
 * It comes from the table's statistics (ANALYZE, autovacuum) scaled to the table's size on disk now, so it follows
 * a growing table between two analyses. The planner never estimates fewer than one row.
 * The queries are explained one after another, on the connection (or in the transaction) they were built on.
 */
export async function plannerRows(queries: readonly Explainable[]): Promise<number[]> {
  const rows: number[] = [];
  for (const query of queries) rows.push(planRows(await query.explain('json')));
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
