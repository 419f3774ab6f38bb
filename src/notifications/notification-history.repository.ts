import { Injectable } from '@nestjs/common';
import { sql } from 'kysely';
import { DatabaseService } from '../database/database.service';
import { milliseconds, now } from '../database/sql-expressions';
import { letterNotificationId } from '../dead-letters/dead-letter.repository';
import type { Notification, NotificationAttempt as NotificationAttemptRow } from '../generated/prisma/client';
import { NOTIFICATION_STATES, NotificationState, ReplaySource } from './dto/notification.query';
import { oneOf } from './known-values';
import { newerVersionExists } from './notification-expressions';
import { GenerateSql, Sample } from '../database/sql-snapshot';

export type NotificationSummary = Omit<
  Pick<
    Notification,
    | 'id'
    | 'subscriptionId'
    | 'type'
    | 'resourceKey'
    | 'sequence'
    | 'pozyUpdatedAt'
    | 'state'
    | 'attempts'
    | 'createdAt'
    | 'nextAttemptAt'
    | 'deliveredAt'
    | 'lastError'
    | 'replayCount'
  >,
  'state'
> & { state: NotificationState };

const OUTCOMES = ['delivered', 'retry', 'dead'] as const;

export type NotificationAttempt = Omit<
  Pick<NotificationAttemptRow, 'attemptedAt' | 'durationMs' | 'statusCode' | 'outcome' | 'error' | 'replay'>,
  'outcome'
> & { outcome: (typeof OUTCOMES)[number] };

export interface NotificationDetail extends NotificationSummary {
  data: unknown;
  attemptHistory: NotificationAttempt[];
}

/** The summary's columns under the model's (camelCase) field names. */
const SUMMARY = [
  'id',
  'subscription_id as subscriptionId',
  'type',
  'resource_key as resourceKey',
  'sequence',
  'pozy_updated_at as pozyUpdatedAt',
  'state',
  'attempts',
  'created_at as createdAt',
  'next_attempt_at as nextAttemptAt',
  'delivered_at as deliveredAt',
  'last_error as lastError',
  'replay_count as replayCount',
] as const;

const summary = <R extends { state: string }>(row: R): Omit<R, 'state'> & { state: NotificationState } => ({
  ...row,
  state: oneOf(NOTIFICATION_STATES, row.state, 'notification state'),
});

/** The notifications' history: what the admin endpoints list, replays, and what retention prunes. */
@Injectable()
export class NotificationHistoryRepository {
  constructor(private readonly database: DatabaseService) {}

  /** Newest first. */
  @GenerateSql({ params: [{ subscriptionId: Sample.UUID, state: 'dead', limit: 100 }] })
  async list(filter: { subscriptionId?: string; state?: NotificationState; limit: number }): Promise<NotificationSummary[]> {
    let query = this.database.db.selectFrom('notification').select(SUMMARY).orderBy('created_at', 'desc').orderBy('id').limit(filter.limit);
    if (filter.subscriptionId !== undefined) query = query.where('subscription_id', '=', filter.subscriptionId);
    if (filter.state !== undefined) query = query.where('state', '=', filter.state);
    return (await query.execute()).map(summary);
  }

  @GenerateSql({ params: [Sample.UUID] })
  async get(id: string): Promise<NotificationDetail | undefined> {
    const row = await this.database.db
      .selectFrom('notification')
      .select([...SUMMARY, 'data'])
      .where('id', '=', id)
      .executeTakeFirst();
    if (!row) return undefined;
    const attempts = await this.database.db
      .selectFrom('notification_attempt')
      .select(['attempted_at as attemptedAt', 'duration_ms as durationMs', 'status_code as statusCode', 'outcome', 'error', 'replay'])
      .where('notification_id', '=', id)
      .orderBy('id')
      .execute();
    return {
      ...summary(row),
      attemptHistory: attempts.map((a) => ({ ...a, outcome: oneOf(OUTCOMES, a.outcome, 'attempt outcome') })),
    };
  }

  /** The id of a newer version of the same resource for the same subscription, if there is one. */
  @GenerateSql({ params: [Sample.UUID] })
  async newerThan(id: string): Promise<string | undefined> {
    const row = await this.database.db
      .selectFrom('notification as n')
      .innerJoin('notification as m', (join) =>
        join
          .onRef('m.subscription_id', '=', 'n.subscription_id')
          .onRef('m.workspace_id', '=', 'n.workspace_id')
          .onRef('m.resource_key', '=', 'n.resource_key')
          .onRef('m.sequence', '>', 'n.sequence')
          .on('m.state', '<>', 'cancelled'),
      )
      .select('m.id')
      .where('n.id', '=', id)
      .orderBy('m.sequence', 'desc')
      .limit(1)
      .executeTakeFirst();
    return row?.id;
  }

  /**
   * What a bulk replay of a subscription would take: from the dead-letter queue, or every notification sent
   * (delivered or dead), in both cases only the newest per resource.
   */
  @GenerateSql({ params: [Sample.UUID, Sample.DATE, 'dead'] })
  async replayable(subscriptionId: string, since: Date, source: ReplaySource): Promise<string[]> {
    const states = source === 'history' ? ['dead', 'delivered'] : ['dead'];
    const rows = await this.database.db
      .selectFrom('notification as n')
      .select('n.id')
      .where('n.subscription_id', '=', subscriptionId)
      .where('n.created_at', '>=', since)
      .where((eb) => eb.not(newerVersionExists(eb)))
      .where('n.state', 'in', states)
      .orderBy('n.created_at')
      .orderBy('n.id')
      .execute();
    return rows.map((r) => r.id);
  }

  /**
   * Makes these notifications due again with their ids unchanged, spread out so a subscriber gets at most `perSecond`
   * replays a second, after any replays it is still waiting for; the dead letters they came from are marked
   * replayed. A version older than one the subscriber may already have is never replayed. Answers the ids that were.
   */
  @GenerateSql({ params: [[Sample.UUID], Sample.NUMBER] })
  async replay(ids: string[], perSecond: number): Promise<string[]> {
    const rows = await this.database.db
      .with('chosen', (db) =>
        db
          .selectFrom('notification as n')
          .select((eb) => [
            'n.id',
            'n.subscription_id',
            eb.fn
              .agg<number>('row_number')
              .over((over) => over.partitionBy('n.subscription_id').orderBy('n.created_at').orderBy('n.id'))
              .as('ord'),
          ])
          .where((eb) => eb('n.id', '=', eb.fn.any(eb.val(ids))))
          .where('n.state', 'in', ['dead', 'delivered'])
          .where((eb) => eb.not(newerVersionExists(eb))),
      )
      .with('start', (db) =>
        db
          .selectFrom((db) => db.selectFrom('chosen').select('chosen.subscription_id').distinct().as('c'))
          .select((eb) => [
            'c.subscription_id',
            eb
              .fn<Date>('greatest', [
                now(),
                eb
                  .selectFrom('notification as p')
                  .select((eb) => eb.fn.max('p.next_attempt_at').as('at'))
                  .whereRef('p.subscription_id', '=', 'c.subscription_id')
                  .where('p.state', '=', 'pending')
                  .where('p.replay_count', '>', 0),
              ])
              .as('at'),
          ]),
      )
      .with('replayed', (db) =>
        db
          .updateTable('notification as n')
          .from('chosen as c')
          .innerJoin('start as s', 's.subscription_id', 'c.subscription_id')
          .set((eb) => ({
            state: 'pending',
            failing_since: null,
            replay_count: eb('n.replay_count', '+', 1),
            next_attempt_at: sql<Date>`${eb.ref('s.at')} + ${milliseconds(sql<number>`(${eb.ref('c.ord')} - 1) * (1000.0 / ${perSecond})`)}`,
          }))
          .whereRef('n.id', '=', 'c.id')
          .returning('n.id'),
      )
      .with('letters', (db) =>
        db
          .updateTable('dead_letter')
          .set((eb) => ({ replayed_at: now(), replay_count: eb('replay_count', '+', 1) }))
          .where('kind', '=', 'notification')
          .where('replayed_at', 'is', null)
          .where((eb) => eb(letterNotificationId(eb.ref('payload')), 'in', eb.selectFrom('replayed').select('replayed.id'))),
      )
      .selectFrom('replayed')
      .select('replayed.id')
      .execute();
    return rows.map((r) => r.id);
  }

  /**
   * Retention: deletes up to `limit` attempts made before `cutoff`; answers how many. Picked by primary key with SKIP
   * LOCKED, so a row being written right now is left to the next batch.
   */
  @GenerateSql({ params: [Sample.DATE, Sample.NUMBER] })
  async pruneAttemptsBefore(cutoff: Date, limit: number): Promise<number> {
    const { numDeletedRows } = await this.database.db
      .deleteFrom('notification_attempt')
      .where('id', 'in', (eb) =>
        eb.selectFrom('notification_attempt').select('id').where('attempted_at', '<', cutoff).limit(limit).forUpdate().skipLocked(),
      )
      .executeTakeFirst();
    return Number(numDeletedRows);
  }

  /**
   * Retention: deletes up to `limit` notifications created (and delivered, if they were) before `cutoff`, in final
   * states only: pending ones are still to be sent, dead ones wait for an operator. One delivered again inside the
   * window (a replay) is kept. An older pending or dead one of the same resource keeps the newer ones too: they are what
   * stops it from being sent after them. Their remaining attempts go with them (ON DELETE CASCADE).
   */
  @GenerateSql({ params: [Sample.DATE, Sample.NUMBER] })
  async pruneBefore(cutoff: Date, limit: number): Promise<number> {
    const { numDeletedRows } = await this.database.db
      .deleteFrom('notification')
      .where('id', 'in', (eb) =>
        eb
          .selectFrom('notification as n')
          .select('n.id')
          .where('n.state', 'in', ['delivered', 'superseded', 'cancelled'])
          .where('n.created_at', '<', cutoff)
          .where((eb) => eb.or([eb('n.delivered_at', 'is', null), eb('n.delivered_at', '<', cutoff)]))
          .where((eb) =>
            eb.not(
              eb.exists(
                eb
                  .selectFrom('notification as o')
                  .select(eb.lit(1).as('one'))
                  .whereRef('o.subscription_id', '=', 'n.subscription_id')
                  .whereRef('o.workspace_id', '=', 'n.workspace_id')
                  .whereRef('o.resource_key', '=', 'n.resource_key')
                  .whereRef('o.sequence', '<', 'n.sequence')
                  .where('o.state', 'in', ['pending', 'dead']),
              ),
            ),
          )
          .limit(limit)
          .forUpdate(['n'])
          .skipLocked(),
      )
      .executeTakeFirst();
    return Number(numDeletedRows);
  }
}
