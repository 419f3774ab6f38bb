import { Injectable } from '@nestjs/common';
import { sql } from 'kysely';
import { DatabaseService } from '../database/database.service';
import { isoText } from '../database/sql-expressions';
import type { OpsEventType } from './notification-types';
import { GenerateSql, Sample } from '../database/sql-snapshot';

/** One occurrence of an operational event. */
export interface OpsOccurrence {
  type: OpsEventType;
  /** Names the occurrence alike on every replica that sees it: the first to insert it notifies, the rest do nothing. */
  key: string;
  /** The workspace it is about; null for the deployment's own (a subscriber, a Pozy key). */
  workspaceId: string | null;
  data: Record<string, unknown>;
}

/** ops_event: each occurrence once, with a notification to every active subscription asking for its type. */
@Injectable()
export class OpsEventRepository {
  constructor(private readonly database: DatabaseService) {}

  /** Answers the notifications queued: none when another replica (or an earlier look) recorded the occurrence first. */
  @GenerateSql({ params: [{ type: 'subscription.paused', key: Sample.STRING, workspaceId: null, data: {} }] })
  async record(occurrence: OpsOccurrence): Promise<number> {
    const db = this.database.db;
    const row = await db
      .with('occurred', (db) =>
        db
          .insertInto('ops_event')
          .values({ id: occurrence.key, type: occurrence.type, workspace_id: occurrence.workspaceId, data: JSON.stringify(occurrence.data) })
          .onConflict((oc) => oc.column('id').doNothing())
          .returning(['id', 'type', 'workspace_id', 'data', 'occurred_at']),
      )
      .with('notified', (db) =>
        db
          .insertInto('notification')
          .columns(['id', 'subscription_id', 'workspace_id', 'type', 'resource_key', 'sequence', 'data'])
          .expression((eb) =>
            eb
              .selectFrom('occurred as o')
              .innerJoin('subscription as s', (join) =>
                join.on((eb) =>
                  eb.and([
                    eb.ref('s.active'),
                    eb('s.deleted_at', 'is', null),
                    eb('o.type', '=', eb.fn.any('s.event_types')),
                    eb.or([
                      eb(eb.fn('cardinality', ['s.workspace_ids']), '=', eb.lit(0)),
                      eb('o.workspace_id', 'is', null),
                      eb('o.workspace_id', '=', eb.fn.any('s.workspace_ids')),
                    ]),
                  ]),
                ),
              )
              .select((eb) => [
                sql<string>`'msg_' || replace(gen_random_uuid()::text, '-', '')`.as('id'),
                's.id as subscription_id',
                // A notification belongs to a workspace; the deployment's own events to none ('').
                eb.fn.coalesce('o.workspace_id', sql<string>`''`).as('workspace_id'),
                'o.type',
                // One of its kind: never superseded by another ops event.
                sql<string>`'ops:' || ${eb.ref('o.id')}`.as('resource_key'),
                sql<number>`1`.as('sequence'),
                sql<unknown>`${eb.ref('o.data')} || jsonb_build_object('id', ${eb.ref('o.id')}, 'workspaceId', ${eb.ref('o.workspace_id')},
                  'occurredAt', ${isoText(eb.ref('o.occurred_at'))})`.as('data'),
              ]),
          )
          .returning((eb) => eb.lit(1).as('one')),
      )
      .selectNoFrom((eb) =>
        eb
          .selectFrom('notified')
          .select((eb) => eb.cast<number>(eb.fn.countAll(), 'integer').as('n'))
          .as('notified'),
      )
      .executeTakeFirstOrThrow();
    return row.notified ?? 0;
  }

  /** The key of the objective's breach not yet followed by its recovery, or null. */
  @GenerateSql({ params: [Sample.STRING] })
  async openBreach(objective: string): Promise<{ key: string; at: Date } | null> {
    const last = await this.database.db
      .selectFrom('ops_event')
      .select(['id', 'type', 'occurred_at'])
      .where('type', 'in', ['ops.objective.breached', 'ops.objective.recovered'])
      .where(sql<string>`data->>'objective'`, '=', objective)
      .orderBy('occurred_at', 'desc')
      .orderBy('id', 'desc')
      .limit(1)
      .executeTakeFirst();
    return last?.type === 'ops.objective.breached' ? { key: last.id, at: last.occurred_at } : null;
  }

  /** Retention: deletes up to `limit` occurrences older than `cutoff`; answers how many. */
  @GenerateSql({ params: [Sample.DATE, Sample.NUMBER] })
  async pruneBefore(cutoff: Date, limit: number): Promise<number> {
    const db = this.database.db;
    const result = await db
      .deleteFrom('ops_event')
      .where('id', 'in', db.selectFrom('ops_event').select('id').where('occurred_at', '<', cutoff).limit(limit).forUpdate().skipLocked())
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
