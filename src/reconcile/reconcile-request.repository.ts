import { Injectable } from '@nestjs/common';
import { sql } from 'kysely';
import { type Db, DatabaseService } from '../database/database.service';
import { milliseconds, now } from '../database/sql-expressions';
import type { ResourceType } from '../common/resources';
import type { WorkspaceId } from '../common/workspace-id';
import { GenerateSql, Sample } from '../database/sql-snapshot';

export interface ReadState {
  /** When the last successful read of the resource began. */
  lastReadAt: Date | null;
  /** When an operator last asked for a read regardless (admin resync). */
  forcedAt: Date | null;
  /** When the first event of the pending read arrived (our clock): where the mirror's freshness is measured from. */
  requestedAt: Date | null;
}

/**
 * reconcile_request: per resource, whether a read from Pozy is pending and when, and what the reads so far found.
 * The receive statement (PozyEventRepository.insertBatch) also writes it, in the events' own transaction.
 */
@Injectable()
export class ReconcileRequestRepository {
  constructor(private readonly database: DatabaseService) {}

  /**
   * Takes up to `limit` due requests, earliest first, and marks them dispatched; pass the transaction their jobs are
   * added in, so that a request is never lost nor turned into two jobs. Replicas share the work: rows another pass
   * holds are skipped, not waited for.
   */
  @GenerateSql({ params: [Sample.NUMBER] })
  takeDue(limit: number, db: Db = this.database.db) {
    return db
      .updateTable('reconcile_request as r')
      .set((eb) => ({ due_at: null, dispatched_at: eb.fn('now') }))
      .from(
        db
          .selectFrom('reconcile_request')
          .select(['workspace_id', 'key'])
          .where((eb) => eb('due_at', '<=', eb.fn<Date>('now')))
          .orderBy('due_at')
          .limit(limit)
          .forUpdate()
          .skipLocked()
          .as('due'),
      )
      .whereRef('r.workspace_id', '=', 'due.workspace_id')
      .whereRef('r.key', '=', 'due.key')
      .returning(['r.workspace_id', 'r.key', 'r.resource_type', 'r.resource_id'])
      .execute();
  }

  /** The workspace's reads waiting to be dispatched, and since when the oldest waits (the workspace's lag). */
  @GenerateSql({ params: [Sample.WORKSPACE] })
  async pendingOf(workspaceId: WorkspaceId): Promise<{ pending: number; oldestRequestedAt: Date | null }> {
    const row = await this.database.db
      .selectFrom('reconcile_request')
      .select((eb) => [eb.cast<number>(eb.fn.countAll(), 'integer').as('pending'), eb.fn.min('requested_at').as('oldest')])
      .where('workspace_id', '=', workspaceId)
      .where('due_at', 'is not', null)
      .executeTakeFirstOrThrow();
    return { pending: row.pending, oldestRequestedAt: row.oldest };
  }

  /** Makes these workspaces' postponed reads due now (a lifted pause of their key); answers how many. */
  @GenerateSql({ params: [Sample.WORKSPACE] })
  async advancePostponed(workspaceIds: readonly WorkspaceId[]): Promise<number> {
    if (workspaceIds.length === 0) return 0;
    const result = await this.database.db
      .updateTable('reconcile_request')
      .set((eb) => ({ due_at: eb.fn('now') }))
      .where('workspace_id', 'in', [...workspaceIds])
      .where((eb) => eb('due_at', '>', eb.fn<Date>('now')))
      .executeTakeFirst();
    return Number(result.numUpdatedRows);
  }

  /**
   * The workspaces whose oldest waiting read is oldest, `limit` of them: among the 1,000 oldest waiting reads (the
   * pending index's first entries), so that the statement reads the same at ten waiting reads and at a million.
   */
  @GenerateSql({ params: [Sample.NUMBER] })
  async furthestBehind(limit: number, db: Db = this.database.db): Promise<{ workspaceId: WorkspaceId; waitingSince: Date }[]> {
    const oldest = db
      .selectFrom('reconcile_request')
      .select(['workspace_id', 'requested_at'])
      .where('due_at', 'is not', null)
      .orderBy('requested_at')
      .limit(1_000)
      .as('oldest');
    const rows = await db
      .selectFrom(oldest)
      .select((eb) => ['oldest.workspace_id', eb.fn.min('oldest.requested_at').as('since')])
      .groupBy('oldest.workspace_id')
      .orderBy('since')
      .limit(limit)
      .execute();
    return rows.map((row) => ({ workspaceId: row.workspace_id, waitingSince: row.since }));
  }

  /** When the earliest pending request falls due (null: none pending). */
  @GenerateSql({ params: [] })
  async nextDueAt(): Promise<Date | null> {
    const row = await this.database.db
      .selectFrom('reconcile_request')
      .select((eb) => eb.fn.min('due_at').as('next'))
      .executeTakeFirstOrThrow();
    return row.next;
  }

  /**
   * An operator's read (admin resync): due now, and forced: only a read that starts after this request may count as
   * having seen everything. Answers when it is due.
   */
  @GenerateSql({ params: [Sample.WORKSPACE, Sample.STRING, 'post', Sample.UUID] })
  async requestForcedRead(workspaceId: WorkspaceId, key: string, type: ResourceType, id: string): Promise<Date> {
    const row = await this.database.db
      .insertInto('reconcile_request')
      .values((eb) => ({
        workspace_id: workspaceId,
        key,
        resource_type: type,
        resource_id: id,
        due_at: eb.fn('now'),
        requested_at: eb.fn('now'),
        forced_at: eb.fn('now'),
      }))
      .onConflict((oc) =>
        oc.columns(['workspace_id', 'key']).doUpdateSet((eb) => ({ due_at: eb.fn('now'), requested_at: eb.fn('now'), forced_at: eb.fn('now') })),
      )
      .returning('due_at')
      .executeTakeFirstOrThrow();
    // Set to now() just above.
    return row.due_at ?? new Date();
  }

  @GenerateSql({ params: [Sample.WORKSPACE, Sample.STRING] })
  async readState(workspaceId: WorkspaceId, key: string): Promise<ReadState> {
    const row = await this.database.db
      .selectFrom('reconcile_request')
      .select(['last_read_at', 'forced_at', 'requested_at'])
      .where('workspace_id', '=', workspaceId)
      .where('key', '=', key)
      .executeTakeFirst();
    return { lastReadAt: row?.last_read_at ?? null, forcedAt: row?.forced_at ?? null, requestedAt: row?.requested_at ?? null };
  }

  @GenerateSql({ params: [Sample.WORKSPACE, Sample.STRING, Sample.DATE] })
  async recordRead(workspaceId: WorkspaceId, key: string, startedAt: Date): Promise<void> {
    await this.database.db
      .updateTable('reconcile_request')
      .set((eb) => ({ last_read_at: eb.fn('greatest', [eb.ref('last_read_at'), eb.val(startedAt)]) }))
      .where('workspace_id', '=', workspaceId)
      .where('key', '=', key)
      .execute();
  }

  /** A read failed on a timeout or an unreachable Pozy: how long (by the database's clock) have failures lasted? */
  @GenerateSql({ params: [Sample.WORKSPACE, Sample.STRING] })
  async markFailing(workspaceId: WorkspaceId, key: string): Promise<{ since: Date; forMs: number }> {
    const row = await this.database.db
      .updateTable('reconcile_request')
      .set((eb) => ({ failing_since: eb.fn.coalesce('failing_since', eb.fn<Date>('now')) }))
      .where('workspace_id', '=', workspaceId)
      .where('key', '=', key)
      .returning((eb) => [
        eb.ref('failing_since').as('since'),
        sql<number>`(extract(epoch FROM now() - ${eb.ref('failing_since')}) * 1000)::int`.as('for_ms'),
      ])
      .executeTakeFirst();
    return row?.since ? { since: row.since, forMs: row.for_ms } : { since: new Date(), forMs: 0 };
  }

  @GenerateSql({ params: [Sample.WORKSPACE, Sample.STRING] })
  async clearFailing(workspaceId: WorkspaceId, key: string): Promise<void> {
    await this.database.db
      .updateTable('reconcile_request')
      .set({ failing_since: null })
      .where('workspace_id', '=', workspaceId)
      .where('key', '=', key)
      .where('failing_since', 'is not', null)
      .execute();
  }

  /** Pozy asked us to wait: the read is pending again, due no sooner than `ms` from now. */
  @GenerateSql({ params: [Sample.WORKSPACE, Sample.STRING, Sample.NUMBER] })
  async postpone(workspaceId: WorkspaceId, key: string, ms: number): Promise<void> {
    await this.database.db
      .updateTable('reconcile_request')
      .set((eb) => ({
        due_at: eb.fn('greatest', [eb.fn.coalesce('due_at', eb.fn<Date>('now')), sql<Date>`${now()} + ${milliseconds(Math.ceil(ms), 'int')}`]),
      }))
      .where('workspace_id', '=', workspaceId)
      .where('key', '=', key)
      .execute();
  }
}
