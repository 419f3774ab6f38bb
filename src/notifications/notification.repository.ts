import { Injectable } from '@nestjs/common';
import { Selectable, sql } from 'kysely';
import { DatabaseService } from '../database/database.service';
import { letterNotificationId, NotificationLetterPayload } from '../dead-letters/dead-letter.repository';
import type { DB } from '../generated/kysely/database';
import { isoText, milliseconds, now } from '../database/sql-expressions';
import { newerVersionExists } from './notification-expressions';
import { precompiled } from '../database/precompiled';
import { GenerateSql, Sample } from '../database/sql-snapshot';

/** What one attempt came to, as the deliverer decided. */
export interface AttemptRecord {
  id: string;
  attemptedAt: Date;
  durationMs: number;
  statusCode: number | null;
  outcome: 'delivered' | 'retry' | 'dead';
  error: string | null;
  /** For `retry`. */
  nextAttemptAt: Date | null;
  /** Since when attempts have kept timing out or finding the endpoint unreachable (null: the last one did not). */
  failingSince: Date | null;
  /** For `dead`: why it went to the dead-letter queue. */
  reason: string | null;
  replay: boolean;
}

/** A subscription this worker now sends to. */
export type Lease = Awaited<ReturnType<NotificationRepository['leaseDue']>>[number];

/** A pending notification whose time has come, as the deliverer sends it. */
export type DueNotification = Awaited<ReturnType<NotificationRepository['takeDue']>>[number];

export interface SubscriberHealth {
  /** Set when this batch paused the subscription. */
  pausedAt: Date | null;
  /** False once the lease was lost (deleted, deactivated, or taken over after expiring). */
  leaseHeld: boolean;
}

// The deliverer's statements run for every batch: each is compiled once (database/precompiled.ts).

// Subscriptions with due notifications that no live worker is sending: each is taken by one worker at a time.
const LEASE_DUE = precompiled((db, a: { owner: string; leaseMs: number; excluded: string[]; limit: number }) =>
  db
    .updateTable('subscription as s')
    .from((eb) =>
      eb
        .selectFrom('subscription as c')
        .select('c.id')
        .where((eb) =>
          eb.and([
            eb.ref('c.active'),
            eb('c.deleted_at', 'is', null),
            eb('c.paused_at', 'is', null),
            eb.or([eb('c.lease_until', 'is', null), eb('c.lease_until', '<', now())]),
            eb.not(eb('c.id', '=', eb.fn.any(eb.cast<string[]>(eb.val(a.excluded), sql`uuid[]`)))),
            eb.exists(
              eb
                .selectFrom('notification as n')
                .select(eb.lit(1).as('one'))
                .whereRef('n.subscription_id', '=', 'c.id')
                .where('n.next_attempt_at', '<=', now()),
            ),
          ]),
        )
        .limit(a.limit)
        .forUpdate()
        .skipLocked()
        .as('due'),
    )
    .set((eb) => {
      // A previous secret whose overlap has ended signs nothing any more: dropped as the subscription is leased.
      const overlapping = eb('s.previous_secret_until', '>', now());
      return {
        lease_owner: a.owner,
        lease_until: sql<Date>`${now()} + ${milliseconds(a.leaseMs)}`,
        previous_secret: eb.case().when(overlapping).then(eb.ref('s.previous_secret')).end(),
        previous_secret_until: eb.case().when(overlapping).then(eb.ref('s.previous_secret_until')).end(),
      };
    })
    .whereRef('s.id', '=', 'due.id')
    // The secrets as stored: SubscriptionRepository.signingSecrets() decrypts them.
    .returning(['s.id', 's.url', 's.secret', 's.previous_secret as previousSecret', 's.previous_secret_until as previousSecretUntil']),
);

const RELEASE = precompiled((db, a: { subscriptionId: string; owner: string }) =>
  db.updateTable('subscription').set({ lease_owner: null, lease_until: null }).where('id', '=', a.subscriptionId).where('lease_owner', '=', a.owner),
);

const SUPERSEDE = precompiled((db, a: { subscriptionId: string }) =>
  db
    .updateTable('notification as n')
    .set({ state: 'superseded', next_attempt_at: null })
    .where('n.subscription_id', '=', a.subscriptionId)
    .where('n.state', '=', 'pending')
    .where(newerVersionExists),
);

const TAKE_DUE = precompiled((db, a: { subscriptionId: string; limit: number }) =>
  db
    .selectFrom('notification as n')
    .select((eb) => [
      'n.id',
      'n.type',
      'n.resource_key as resourceKey',
      'n.sequence',
      'n.created_at as createdAt',
      'n.data',
      'n.attempts',
      'n.failing_since as failingSince',
      'n.workspace_id as workspaceId',
      'n.trace_parent as traceParent',
      eb('n.replay_count', '>', 0).$castTo<boolean>().as('replay'),
    ])
    .where('n.subscription_id', '=', a.subscriptionId)
    .where('n.next_attempt_at', '<=', now())
    .where('n.state', '=', 'pending')
    .where((eb) => eb.not(newerVersionExists(eb)))
    .orderBy('n.next_attempt_at')
    .orderBy('n.id')
    .limit(a.limit),
);

/** One attempt as the batch statement reads it back from JSON (json_to_recordset), in the tables' own column types. */
type AttemptColumns = Pick<Selectable<DB['notification']>, 'id' | 'next_attempt_at' | 'failing_since'> &
  Pick<Selectable<DB['notification_attempt']>, 'attempted_at' | 'duration_ms' | 'status_code' | 'outcome' | 'error' | 'replay'> & {
    reason: string | null;
  };

// json_to_recordset's column definition list: the builder has no form for one.
const ATTEMPT_COLUMNS = sql`r(id text, attempted_at timestamptz, duration_ms int, status_code int, outcome text, error text,
  next_attempt_at timestamptz, failing_since timestamptz, reason text, replay boolean)`;

// One statement per batch: the notifications' new states, every attempt, the dead letters, and the subscriber's
// health (the circuit breaker pauses it once every attempt has failed for `pauseAfterMs`), which also renews the lease.
const RECORD = precompiled(
  (
    db,
    a: {
      /** AttemptColumns[] as JSON. */
      attempts: string;
      subscriptionId: string;
      owner: string;
      pauseAfterMs: number;
      leaseMs: number;
      quietGapMs: number;
    },
  ) =>
    db
      .with('r', (db) => db.selectFrom(sql<AttemptColumns>`json_to_recordset(${a.attempts}::json)`.as<'r'>(ATTEMPT_COLUMNS)).selectAll())
      .with('updated', (db) =>
        db
          .updateTable('notification as n')
          .from('r')
          .set((eb) => ({
            state: eb.case('r.outcome').when('retry').then('pending').else(eb.ref('r.outcome')).end(),
            attempts: eb('n.attempts', '+', 1),
            next_attempt_at: eb.ref('r.next_attempt_at'),
            failing_since: eb.ref('r.failing_since'),
            last_error: eb.ref('r.error'),
            delivered_at: eb.case().when('r.outcome', '=', 'delivered').then(eb.ref('r.attempted_at')).else(eb.ref('n.delivered_at')).end(),
          }))
          .whereRef('n.id', '=', 'r.id')
          .where('n.state', '=', 'pending')
          .returning('n.id'),
      )
      .with('attempts', (db) =>
        db
          .insertInto('notification_attempt')
          .columns(['notification_id', 'subscription_id', 'attempted_at', 'duration_ms', 'status_code', 'outcome', 'error', 'replay'])
          .expression(
            db
              .selectFrom('r')
              .select((eb) => [
                'r.id',
                eb.cast<string>(eb.val(a.subscriptionId), 'uuid').as('subscription_id'),
                'r.attempted_at',
                'r.duration_ms',
                'r.status_code',
                'r.outcome',
                'r.error',
                'r.replay',
              ]),
          ),
      )
      .with('letters', (db) =>
        db
          .insertInto('dead_letter')
          .columns([
            'workspace_id',
            'id',
            'queue',
            'kind',
            'resource_key',
            'payload',
            'reason',
            'error',
            'attempts',
            'first_failure_at',
            'last_failure_at',
          ])
          .expression(
            db
              .selectFrom('r')
              .innerJoin('updated as u', 'u.id', 'r.id')
              .innerJoin('notification as n', 'n.id', 'r.id')
              .where('r.outcome', '=', 'dead')
              .select((eb) => [
                'n.workspace_id',
                sql<string>`gen_random_uuid()`.as('id'),
                eb.val('delivery').as('queue'),
                eb.val('notification').as('kind'),
                'n.resource_key',
                eb
                  .fn<NotificationLetterPayload>('jsonb_build_object', [
                    sql.lit('notificationId'),
                    'n.id',
                    sql.lit('subscriptionId'),
                    'n.subscription_id',
                    sql.lit('type'),
                    'n.type',
                    sql.lit('sequence'),
                    'n.sequence',
                  ])
                  .as('payload'),
                'r.reason',
                'r.error',
                eb('n.attempts', '+', 1).as('attempts'),
                eb.fn.coalesce('n.failing_since', 'r.attempted_at').as('first_failure_at'),
                'r.attempted_at',
              ]),
          ),
      )
      // A newer version of the resource reached the subscriber: its older dead-lettered ones need no replay any more.
      .with('obsolete', (db) =>
        db
          .updateTable('notification as o')
          .from('r')
          .innerJoin('updated as u', 'u.id', 'r.id')
          .innerJoin('notification as n', 'n.id', 'r.id')
          .set({ state: 'superseded' })
          .where('r.outcome', '=', 'delivered')
          .whereRef('o.subscription_id', '=', 'n.subscription_id')
          .whereRef('o.workspace_id', '=', 'n.workspace_id')
          .whereRef('o.resource_key', '=', 'n.resource_key')
          .whereRef('o.sequence', '<', 'n.sequence')
          .where('o.state', '=', 'dead')
          .returning('o.id'),
      )
      .with('resolved', (db) =>
        db
          .updateTable('dead_letter')
          .set({ resolved_at: now(), resolution: 'superseded: the subscriber received a newer version' })
          .where('kind', '=', 'notification')
          .where('replayed_at', 'is', null)
          .where('resolved_at', 'is', null)
          .where((eb) => eb(letterNotificationId(eb.ref('payload')), 'in', eb.selectFrom('obsolete').select('obsolete.id'))),
      )
      .with('outcome', (db) =>
        db
          .selectFrom('r')
          .select((eb) => [
            eb.fn.max<Date | null>('r.attempted_at').filterWhere('r.outcome', '=', 'delivered').as('last_success'),
            eb.fn.min<Date | null>('r.attempted_at').filterWhere('r.outcome', '<>', 'delivered').as('first_failure'),
            eb.fn.max<Date | null>('r.attempted_at').filterWhere('r.outcome', '<>', 'delivered').as('last_failure'),
            sql<string | null>`(${eb.fn
              .agg<(string | null)[]>('array_agg', ['r.error'])
              .orderBy('r.attempted_at', 'desc')
              .filterWhere('r.outcome', '<>', 'delivered')})[1]`.as('last_error'),
          ]),
      )
      // Failing continuously: no success, and no quiet gap longer than retries leave (`quietGapMs`) since the last
      // failure, so one failure after an idle hour does not count the hour.
      .with('health', (db) =>
        db
          .selectFrom(['outcome as o', 'subscription as s'])
          .where('s.id', '=', a.subscriptionId)
          .selectAll('o')
          .select((eb) =>
            eb
              .case()
              .when(eb.or([eb('o.last_success', 'is not', null), eb('o.first_failure', 'is', null)]))
              .then(eb.lit(null))
              .when(
                eb.or([
                  eb('s.failing_since', 'is', null),
                  eb('s.last_failure_at', '<', sql<Date>`${eb.ref('o.first_failure')} - ${milliseconds(a.quietGapMs)}`),
                ]),
              )
              .then(eb.ref('o.first_failure'))
              .else(eb.ref('s.failing_since'))
              .end()
              .as('failing_since'),
          ),
      )
      .with('breaker', (db) =>
        db
          .selectFrom(['health as h', 'subscription as s'])
          .where('s.id', '=', a.subscriptionId)
          .selectAll('h')
          .select((eb) =>
            eb.and([eb('s.paused_at', 'is', null), eb('h.failing_since', '<', sql<Date>`${now()} - ${milliseconds(a.pauseAfterMs)}`)]).as('trips'),
          ),
      )
      .updateTable('subscription as s')
      .from('breaker as h')
      .set((eb) => ({
        last_success_at: eb.fn.coalesce('h.last_success', 's.last_success_at'),
        last_failure_at: eb.fn.coalesce('h.last_failure', 's.last_failure_at'),
        last_error: eb.fn.coalesce('h.last_error', 's.last_error'),
        failing_since: eb.ref('h.failing_since'),
        paused_at: eb.case().when(eb.ref('h.trips')).then(now()).else(eb.ref('s.paused_at')).end(),
        paused_reason: eb
          .case()
          .when(eb.ref('h.trips'))
          .then(sql<string>`'every attempt failed since ' || ${isoText(eb.ref('h.failing_since'))} || ': ' || ${eb.ref('h.last_error')}`)
          .else(eb.ref('s.paused_reason'))
          .end(),
        lease_until: eb
          .case()
          .when('s.lease_owner', '=', a.owner)
          .then(sql<Date>`${now()} + ${milliseconds(a.leaseMs)}`)
          .else(eb.ref('s.lease_until'))
          .end(),
      }))
      .where('s.id', '=', a.subscriptionId)
      .returning((eb) => [
        's.paused_at',
        eb
          .and([eb('s.lease_owner', '=', a.owner), eb.ref('s.active'), eb('s.deleted_at', 'is', null)])
          .$castTo<boolean | null>()
          .as('leaseHeld'),
      ]),
);

/** The outbox as the delivery worker uses it. */
@Injectable()
export class NotificationRepository {
  constructor(private readonly database: DatabaseService) {}

  /** Takes up to `limit` subscriptions with due notifications for this worker, for `leaseMs`. */
  @GenerateSql({ params: [Sample.STRING, Sample.NUMBER, [Sample.UUID], Sample.NUMBER] })
  async leaseDue(owner: string, leaseMs: number, excluded: string[], limit: number) {
    return (await LEASE_DUE(this.database.db, { owner, leaseMs, excluded, limit })).rows;
  }

  @GenerateSql({ params: [Sample.UUID, Sample.STRING] })
  async release(subscriptionId: string, owner: string): Promise<void> {
    await RELEASE(this.database.db, { subscriptionId, owner });
  }

  /** The next due notifications of a subscription, at most one per resource (its newest). */
  @GenerateSql({ params: [Sample.UUID, Sample.NUMBER] })
  async takeDue(subscriptionId: string, limit: number) {
    await SUPERSEDE(this.database.db, { subscriptionId });
    return (await TAKE_DUE(this.database.db, { subscriptionId, limit })).rows;
  }

  @GenerateSql({
    params: [
      Sample.UUID,
      Sample.STRING,
      [
        {
          id: Sample.UUID,
          attemptedAt: Sample.DATE,
          durationMs: 5,
          statusCode: 200,
          outcome: 'delivered',
          error: null,
          nextAttemptAt: null,
          failingSince: null,
          reason: null,
          replay: false,
        },
      ],
      { pauseAfterMs: 60_000, leaseMs: 30_000, quietGapMs: 1_000 },
    ],
  })
  async record(
    subscriptionId: string,
    owner: string,
    records: AttemptRecord[],
    /** `quietGapMs`: a pause in failures longer than this (retries are closer) starts a new run of failures. */
    options: { pauseAfterMs: number; leaseMs: number; quietGapMs: number },
  ): Promise<SubscriberHealth> {
    const attempts = records.map((r): AttemptColumns => ({
      id: r.id,
      attempted_at: r.attemptedAt,
      duration_ms: r.durationMs,
      status_code: r.statusCode,
      outcome: r.outcome,
      error: r.error,
      next_attempt_at: r.nextAttemptAt,
      failing_since: r.failingSince,
      reason: r.reason,
      replay: r.replay,
    }));
    const {
      rows: [health],
    } = await RECORD(this.database.db, { attempts: JSON.stringify(attempts), subscriptionId, owner, ...options });
    return { pausedAt: health?.paused_at ?? null, leaseHeld: health?.leaseHeld === true };
  }
}
