import { Injectable } from '@nestjs/common';
import { sql } from 'kysely';
import { DatabaseService } from '../database/database.service';
import { GenerateSql, Sample } from '../database/sql-snapshot';
import type { DB } from '../generated/kysely/database';

/**
 * A workspace's tables, in the order its rows are deleted (what refers to a run before the run). Notifications are
 * the subscribers' outboxes, not the workspace's: they stay, and are delivered as committed.
 */
export const WORKSPACE_TABLES = [
  'sweep_seen',
  'sweep_run',
  'backfill_run',
  'reconcile_request',
  'dead_letter',
  'change',
  'pozy_event',
  'resource_version',
  'post',
  'account',
] as const satisfies readonly (keyof DB)[];

export type WorkspaceTable = (typeof WORKSPACE_TABLES)[number];

/** A removed workspace's rows in each of its tables: the one statement that crosses them all. */
@Injectable()
export class WorkspaceRowsRepository {
  constructor(private readonly database: DatabaseService) {}

  /** Deletes at most `limit` of the workspace's rows of `table`; answers how many. */
  @GenerateSql({ params: ['post', Sample.WORKSPACE, 500] })
  async deleteBatch(table: WorkspaceTable, workspaceId: string, limit: number): Promise<number> {
    const db = this.database.db;
    // By ctid: a LIMIT on the rows of the workspace's index range, without sorting them.
    const batch = db
      .selectFrom(table)
      .select(sql<string>`ctid`.as('ctid'))
      .where('workspace_id', '=', workspaceId)
      .limit(limit);
    const result = await db
      .deleteFrom(table)
      .where(sql<boolean>`ctid = ANY (ARRAY(${batch}))`)
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
