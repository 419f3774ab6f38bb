import { Injectable } from '@nestjs/common';
import { DatabaseService } from '../database/database.service';
import type { WorkspaceId } from '../common/workspace-id';
import { GenerateSql, Sample } from '../database/sql-snapshot';

/** One reconcile of a resource as its timeline tells it: what was read (if anything), and what came of it. */
export interface ReadRecord {
  outcome: string;
  /** The request that got Pozy's answer; absent when nothing was read. */
  sentAt?: Date;
  lane?: string;
  statusCode?: number;
  /** What earlier attempts of the request got (`429`, `503`, `none`). */
  retried?: readonly string[];
  /** Why, in words (the skip rule, an older version kept, a lagging 404, the error). */
  detail?: string;
  traceId?: string | null;
  /** The id of the read whose answer was written (PostRead's): the versions that write made carry it, and the timeline finds them by it. */
  readId?: string;
}

/** Kept short: a detail is a sentence, an error's message at most this much of it. */
const MAX_DETAIL = 500;

/** reconcile_read: one row per reconcile of a resource (and per operator's resync), appended, pruned by age. */
@Injectable()
export class ReconcileReadRepository {
  constructor(private readonly database: DatabaseService) {}

  @GenerateSql({ params: [Sample.WORKSPACE, Sample.STRING, { outcome: 'written', sentAt: Sample.DATE, statusCode: 200, readId: Sample.UUID }] })
  async record(workspaceId: WorkspaceId, resourceKey: string, read: ReadRecord): Promise<void> {
    await this.database.db
      .insertInto('reconcile_read')
      .values({
        workspace_id: workspaceId,
        resource_key: resourceKey,
        outcome: read.outcome,
        sent_at: read.sentAt ?? null,
        lane: read.lane ?? null,
        status_code: read.statusCode ?? null,
        retried: [...(read.retried ?? [])],
        detail: read.detail === undefined ? null : read.detail.slice(0, MAX_DETAIL),
        trace_id: read.traceId ?? null,
        read_id: read.readId ?? null,
      })
      .execute();
  }

  /** Retention: deletes up to `limit` rows older than `cutoff` (found through the BRIN index on `at`); answers how many. */
  @GenerateSql({ params: [Sample.DATE, Sample.NUMBER] })
  async pruneBefore(cutoff: Date, limit: number): Promise<number> {
    const db = this.database.db;
    const result = await db
      .deleteFrom('reconcile_read')
      .using(db.selectFrom('reconcile_read').select(['workspace_id', 'id']).where('at', '<', cutoff).limit(limit).forUpdate().skipLocked().as('old'))
      .whereRef('reconcile_read.workspace_id', '=', 'old.workspace_id')
      .whereRef('reconcile_read.id', '=', 'old.id')
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
