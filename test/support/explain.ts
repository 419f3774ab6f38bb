import { CompiledQuery, Kysely, PostgresDialect } from 'kysely';
import type { Pool } from 'pg';
import type { DatabaseService } from '../../src/database/database.service';
import type { DB } from '../../src/generated/kysely/database';

/** A node of PostgreSQL's `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)`, the fields the tests read. */
export interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  /** The conditions an index scan looks up by (a join's inner side names the outer column it probes with). */
  'Index Cond'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  /** Rows the node read and dropped for its filter (per loop). */
  'Rows Removed by Filter'?: number;
  'Shared Hit Blocks'?: number;
  'Shared Read Blocks'?: number;
  Plans?: PlanNode[];
}

export interface ExplainedStatement {
  plan: PlanNode;
  ms: number;
}

/** The plan and its nodes below, flattened. */
export function planNodes(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(planNodes)];
}

/** Rows the plan's nodes on `table` produced, over all their loops. */
export function rowsReadFrom(plan: PlanNode, table: string): number {
  return planNodes(plan)
    .filter((node) => node['Relation Name'] === table)
    .reduce((sum, node) => sum + (node['Actual Rows'] ?? 0) * (node['Actual Loops'] ?? 1), 0);
}

/** Rows the plan's nodes on `table` read, over all their loops: those they produced and those their filter dropped. */
export function rowsVisitedIn(plan: PlanNode, table: string): number {
  return planNodes(plan)
    .filter((node) => node['Relation Name'] === table)
    .reduce((sum, node) => sum + ((node['Actual Rows'] ?? 0) + (node['Rows Removed by Filter'] ?? 0)) * (node['Actual Loops'] ?? 1), 0);
}

/** Shared buffers the whole plan touched (hit in memory or read), the root's count including every node below. */
export const pagesTouched = (plan: PlanNode): number => (plan['Shared Hit Blocks'] ?? 0) + (plan['Shared Read Blocks'] ?? 0);

/** A statement as the code under test sent it, with the `SET LOCAL`s its transaction ran before it. */
export interface SentStatement {
  statement: CompiledQuery;
  settings: string[];
}

/**
 * A DatabaseService for one repository or query builder, on the test's own pool, that records every statement it
 * sends: what the code sends is what a test explains.
 */
export function recordingDatabase(pool: Pool): { database: DatabaseService; sent(): SentStatement[] } {
  const statements: CompiledQuery[] = [];
  const db = new Kysely<DB>({
    dialect: new PostgresDialect({ pool }),
    log: (event) => {
      if (event.level === 'query') statements.push(event.query);
    },
  });
  return {
    database: { db, pool } as unknown as DatabaseService,
    // The statements since the last call, each with the settings its transaction set before it.
    sent: () => {
      const sent: SentStatement[] = [];
      let settings: string[] = [];
      for (const statement of statements.splice(0)) {
        // A transaction's settings may come in one statement with its BEGIN (`BEGIN; SET LOCAL …; SET LOCAL …`).
        const parts = statement.sql
          .split(';')
          .map((part) => part.trim())
          .filter(Boolean);
        if (parts.every((part) => /^(begin|set local .*)$/i.test(part))) settings.push(...parts.filter((part) => /^set local /i.test(part)));
        else {
          sent.push({ statement, settings });
          settings = [];
        }
      }
      return sent;
    },
  };
}

/** Runs the statement under `EXPLAIN (ANALYZE, BUFFERS)` with its settings, in a transaction rolled back after. */
export async function explainAnalyzed(pool: Pool, { statement, settings }: SentStatement): Promise<ExplainedStatement> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    for (const setting of settings) await client.query(setting);
    const { rows } = await client.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode; 'Execution Time': number }> }>(
      `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${statement.sql}`,
      [...statement.parameters],
    );
    const [{ Plan: plan, 'Execution Time': ms }] = rows[0]['QUERY PLAN'];
    return { plan, ms };
  } finally {
    await client.query('ROLLBACK');
    client.release();
  }
}
