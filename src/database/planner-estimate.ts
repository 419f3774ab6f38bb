import type { ClientBase, Pool, QueryResult } from 'pg';

interface ExplainRow {
  'QUERY PLAN': Array<{ Plan: { 'Plan Rows': number } }>;
}

/**
 * PostgreSQL's planner's estimate of the rows each query answers, in one round trip, without running any of them.
 * It comes from the table's statistics (ANALYZE, autovacuum) scaled to the table's size on disk now, so it follows
 * a growing table between two analyses. The planner never estimates fewer than one row.
 * The queries are constant SQL: they are sent as one simple-protocol string, which takes no parameters.
 */
export async function plannerRows(db: Pool | ClientBase, queries: readonly string[]): Promise<number[]> {
  if (queries.length === 0) return [];
  const text = queries.map((sql) => `EXPLAIN (FORMAT JSON) ${sql}`).join(';\n');
  // Several statements in one string answer one result each (pg's types only know the single-result case).
  const answer = (await db.query<ExplainRow>(text)) as QueryResult<ExplainRow> | Array<QueryResult<ExplainRow>>;
  const results = Array.isArray(answer) ? answer : [answer];
  return results.map((result) => Math.round(result.rows[0]['QUERY PLAN'][0].Plan['Plan Rows']));
}
