import { Injectable } from '@nestjs/common';
import { RawBuilder, sql } from 'kysely';
import { DatabaseService } from '../database/database.service';
import { isoText } from '../database/sql-expressions';
import type { WorkspaceId } from '../common/workspace-id';
import { GenerateSql, Sample } from '../database/sql-snapshot';

/** What a timeline is of: a post, or a profile (its accounts' reads, events, feed entries and notifications). */
export type TimelineSubject = { type: 'post'; id: string } | { type: 'profile'; id: string };

/** The kinds of entry, in the order they sort at one instant (an event before the read it caused, and so on). */
export const ENTRY_KINDS = ['event', 'resync', 'reconcile', 'feed', 'notification', 'dead_letter'] as const;
export type EntryKind = (typeof ENTRY_KINDS)[number];

/** An entry's place in the timeline: its time, its kind's rank, and a key unique within the kind. */
export interface TimelinePosition {
  at: Date;
  rank: number;
  key: string;
}

export interface TimelineRow extends TimelinePosition {
  /** The entry's fields, built by PostgreSQL. */
  entry: Record<string, unknown>;
}

/** A version a reconcile's write made, as its entry names it. */
export interface TimelineVersion {
  /** `post:<id>` or `account:<id>`. */
  resource: string;
  sequence: number;
  /** The version before it that the history holds; null when it holds none. */
  previousSequence: number | null;
  /** Top-level fields that differ from that version, bookkeeping aside, by name; null without one to compare with. */
  changedFields: string[] | null;
}

/** A notification's attempts shown at most (the rest are counted by `attempts`). */
const MAX_ATTEMPTS_SHOWN = 20;

const rank = (kind: EntryKind) => ENTRY_KINDS.indexOf(kind);
/** A reconcile_read row is a resync (asked for) or a reconcile (done). */
const readRank = (outcome: unknown) => sql<number>`CASE WHEN ${outcome} = 'resync' THEN ${rank('resync')} ELSE ${rank('reconcile')} END`;
/** A bigint id as text that sorts as the number does (the cursor's key compares text). */
const paddedId = (id: unknown) => sql<string>`lpad(${id}::text, 20, '0')`;
/** The trace id of a stored W3C traceparent (`00-<trace id>-<span id>-<flags>`). */
const traceIdOf = (traceParent: unknown) => sql<string | null>`split_part(${traceParent}, '-', 2)`;
/** The columns every kind of entry carries for the merge: the read that a reconcile made, none for the others. */
const noRead = [sql<string | null>`NULL::uuid`.as('read_id'), sql<Date | null>`NULL::timestamptz`.as('sent_at')] as const;
/** Fields of a version any write of the resource changes (GET /posts/:id's bookkeeping): not what changed. */
const BOOKKEEPING = sql.raw(`ARRAY['sequence', 'syncedAt', 'lastEventAt']::text[]`);
/** The outcomes of a write that may have changed the resource (the others never do: stale, unknown, skipped, …). */
const WRITES = sql.raw(`ARRAY['written', 'deleted']::text[]`);

/**
 * A resource's timeline, read only, across the tables that tell it: its events (pozy_event), each reconcile and
 * resync (reconcile_read), its feed entries (change), its notifications with their attempts (notification,
 * notification_attempt) and its dead letters. One statement: each table's rows after the cursor, by its
 * resource index, `limit + 1` of them, merged in time order; then, for the page's reconciles alone, the versions
 * their writes made (resource_version, by its (resource, read_at) index and the read's id) and the version before
 * each (by primary key), compared field by field. A page costs what the resource holds, never the tables' size.
 */
@Injectable()
export class TimelineRepository {
  constructor(private readonly database: DatabaseService) {}

  /**
   * `versionsKeptSince`: versions read since then are all kept (the history's retention prunes only older ones), so a
   * read since then with no version changed nothing; an older one may have had its version pruned (`changed` null).
   */
  @GenerateSql({ params: [Sample.WORKSPACE, { type: 'post', id: Sample.STRING }, null, Sample.NUMBER, Sample.DATE] })
  async page(
    workspaceId: WorkspaceId,
    subject: TimelineSubject,
    after: TimelinePosition | null,
    limit: number,
    versionsKeptSince: Date,
  ): Promise<TimelineRow[]> {
    const db = this.database.db;
    const key = `${subject.type}:${subject.id}`;
    const n = limit + 1;
    // Row comparison: strictly after the cursor's entry, in (at, rank, key) order.
    const past = (at: unknown, kind: EntryKind | RawBuilder<number>, k: unknown) => {
      const r = typeof kind === 'string' ? sql<number>`${rank(kind)}` : kind;
      return after
        ? sql<boolean>`(${at}, ${r}::int, ${k}::text) > (${after.at}::timestamptz, ${after.rank}::int, ${after.key}::text)`
        : sql<boolean>`true`;
    };
    const since = (at: unknown) => (after ? sql<boolean>`${at} >= ${after.at}::timestamptz` : sql<boolean>`true`);
    // A profile's feed entries and notifications are its accounts'.
    const accountKeys = db
      .selectFrom('account')
      .select(sql<string>`'account:' || id`.as('k'))
      .where('workspace_id', '=', workspaceId)
      .where('profile_id', '=', subject.id);
    const accountIds = db.selectFrom('account').select('id').where('workspace_id', '=', workspaceId).where('profile_id', '=', subject.id);

    const events = db
      .selectFrom('pozy_event as e')
      .select((eb) => [
        eb.ref('e.received_at').as('at'),
        sql<number>`${rank('event')}`.as('rank'),
        eb.ref('e.id').as('key'),
        sql<
          Record<string, unknown>
        >`jsonb_build_object('eventId', ${eb.ref('e.id')}, 'type', ${eb.ref('e.type')}, 'timestamp', ${isoText(eb.ref('e.timestamp'))},
          'attempt', ${eb.ref('e.attempt')}, 'deliveryId', ${eb.ref('e.delivery_id')}, 'copies', ${eb.ref('e.copies')},
          'duplicates', ${eb.ref('e.copies')} - 1, 'recoveredBy', ${eb.ref('e.recovered_by')}, 'account', ${eb.ref('e.payload')}->'account'->>'accountId',
          'traceId', ${traceIdOf(eb.ref('e.trace_parent'))})`.as('entry'),
        ...noRead,
      ])
      .where('e.workspace_id', '=', workspaceId)
      .where('e.resource_type', '=', subject.type)
      .where('e.resource_id', '=', subject.id)
      .where((eb) => past(eb.ref('e.received_at'), 'event', eb.ref('e.id')))
      .orderBy('e.received_at')
      .orderBy('e.id')
      .limit(n);

    const reads = db
      .selectFrom('reconcile_read as r')
      .select((eb) => [
        eb.ref('r.at').as('at'),
        readRank(eb.ref('r.outcome')).as('rank'),
        paddedId(eb.ref('r.id')).as('key'),
        sql<
          Record<string, unknown>
        >`jsonb_build_object('outcome', ${eb.ref('r.outcome')}, 'lane', ${eb.ref('r.lane')}, 'statusCode', ${eb.ref('r.status_code')}, 'retried', to_jsonb(${eb.ref('r.retried')}),
          'sentAt', ${isoText(eb.ref('r.sent_at'))}, 'detail', ${eb.ref('r.detail')}, 'traceId', ${eb.ref('r.trace_id')})`.as('entry'),
        eb.ref('r.read_id').as('read_id'),
        eb.ref('r.sent_at').as('sent_at'),
      ])
      .where('r.workspace_id', '=', workspaceId)
      .where('r.resource_key', '=', key)
      .where((eb) => since(eb.ref('r.at')))
      .where((eb) => past(eb.ref('r.at'), readRank(eb.ref('r.outcome')), paddedId(eb.ref('r.id'))))
      .orderBy('r.at')
      .orderBy('r.id')
      .limit(n);

    const feed = db
      .selectFrom('change as c')
      .select((eb) => [
        eb.ref('c.changed_at').as('at'),
        sql<number>`${rank('feed')}`.as('rank'),
        paddedId(eb.ref('c.id')).as('key'),
        sql<
          Record<string, unknown>
        >`jsonb_build_object('type', ${eb.ref('c.type')}, 'resourceId', ${eb.ref('c.resource_id')}, 'sequence', ${eb.ref('c.sequence')},
          'position', ${eb.ref('c.position')}::text)`.as('entry'),
        ...noRead,
      ])
      .where('c.workspace_id', '=', workspaceId)
      .where((eb) =>
        subject.type === 'post'
          ? eb.and([eb('c.resource_id', '=', subject.id), eb('c.type', 'like', 'post.%')])
          : eb.and([eb('c.resource_id', 'in', accountIds), eb('c.type', 'like', 'account.%')]),
      )
      .where((eb) => past(eb.ref('c.changed_at'), 'feed', paddedId(eb.ref('c.id'))))
      .orderBy('c.changed_at')
      .orderBy('c.id')
      .limit(n);

    const notifications = db
      .selectFrom('notification as m')
      .select((eb) => [
        eb.ref('m.created_at').as('at'),
        sql<number>`${rank('notification')}`.as('rank'),
        eb.ref('m.id').as('key'),
        sql<Record<string, unknown>>`jsonb_build_object('notificationId', ${eb.ref('m.id')}, 'subscriptionId', ${eb.ref('m.subscription_id')},
          'type', ${eb.ref('m.type')}, 'resourceKey', ${eb.ref('m.resource_key')}, 'sequence', ${eb.ref('m.sequence')}, 'state', ${eb.ref('m.state')},
          'attempts', ${eb.ref('m.attempts')}, 'deliveredAt', ${isoText(eb.ref('m.delivered_at'))}, 'traceId', ${traceIdOf(eb.ref('m.trace_parent'))},
          'attemptHistory', coalesce((${eb
            .selectFrom('notification_attempt as a')
            .select((eb) =>
              sql`jsonb_agg(jsonb_build_object('at', ${isoText(eb.ref('a.attempted_at'))}, 'statusCode', ${eb.ref('a.status_code')},
                'outcome', ${eb.ref('a.outcome')}, 'durationMs', ${eb.ref('a.duration_ms')}, 'error', ${eb.ref('a.error')}, 'replay', ${eb.ref('a.replay')})
                ORDER BY ${eb.ref('a.attempted_at')}, ${eb.ref('a.id')})`.as('list'),
            )
            .where('a.id', 'in', (eb) =>
              eb
                .selectFrom('notification_attempt as b')
                .select('b.id')
                .whereRef('b.notification_id', '=', 'm.id')
                .orderBy('b.attempted_at')
                .orderBy('b.id')
                .limit(MAX_ATTEMPTS_SHOWN),
            )}), '[]'::jsonb))`.as('entry'),
        ...noRead,
      ])
      .where('m.workspace_id', '=', workspaceId)
      .where((eb) => (subject.type === 'post' ? eb('m.resource_key', '=', key) : eb('m.resource_key', 'in', accountKeys)))
      .where((eb) => past(eb.ref('m.created_at'), 'notification', eb.ref('m.id')))
      .orderBy('m.created_at')
      .orderBy('m.id')
      .limit(n);

    const letters = db
      .selectFrom('dead_letter as d')
      .select((eb) => [
        eb.ref('d.created_at').as('at'),
        sql<number>`${rank('dead_letter')}`.as('rank'),
        sql<string>`${eb.ref('d.id')}::text`.as('key'),
        sql<
          Record<string, unknown>
        >`jsonb_build_object('deadLetterId', ${eb.ref('d.id')}, 'letterKind', ${eb.ref('d.kind')}, 'resourceKey', ${eb.ref('d.resource_key')},
          'reason', ${eb.ref('d.reason')}, 'error', ${eb.ref('d.error')}, 'attempts', ${eb.ref('d.attempts')}, 'replayedAt', ${isoText(eb.ref('d.replayed_at'))},
          'resolution', ${eb.ref('d.resolution')})`.as('entry'),
        ...noRead,
      ])
      .where('d.workspace_id', '=', workspaceId)
      .where((eb) =>
        subject.type === 'post' ? eb('d.resource_key', '=', key) : eb.or([eb('d.resource_key', '=', key), eb('d.resource_key', 'in', accountKeys)]),
      )
      .where((eb) => past(eb.ref('d.created_at'), 'dead_letter', sql`${eb.ref('d.id')}::text`))
      .orderBy('d.created_at')
      .orderBy('d.id')
      .limit(n);

    const merged = db
      .selectFrom(events.as('events'))
      .selectAll()
      .unionAll(db.selectFrom(reads.as('reads')).selectAll())
      .unionAll(db.selectFrom(feed.as('feed')).selectAll())
      .unionAll(db.selectFrom(notifications.as('notifications')).selectAll())
      .unionAll(db.selectFrom(letters.as('letters')).selectAll());
    const pageRows = db.selectFrom(merged.as('t')).selectAll().orderBy('at').orderBy('rank').orderBy('key').limit(n);

    // What a reconcile on the page changed: the versions its write made, found by the resource's (…, read_at) index at
    // the read's start and its id, each with the version before it (by primary key) and the fields that differ.
    const versions = db
      .selectFrom('resource_version as v')
      .leftJoinLateral(
        (eb) =>
          eb
            .selectFrom('resource_version as o')
            .select(['o.sequence', 'o.data'])
            .whereRef('o.workspace_id', '=', 'v.workspace_id')
            .whereRef('o.resource_type', '=', 'v.resource_type')
            .whereRef('o.resource_id', '=', 'v.resource_id')
            .whereRef('o.sequence', '<', 'v.sequence')
            .orderBy('o.sequence', 'desc')
            .limit(1)
            .as('o'),
        (join) => join.onTrue(),
      )
      .select((eb) =>
        sql<TimelineVersion[] | null>`jsonb_agg(jsonb_build_object('resource', ${eb.ref('v.resource_type')} || ':' || ${eb.ref('v.resource_id')},
          'sequence', ${eb.ref('v.sequence')}, 'previousSequence', ${eb.ref('o.sequence')},
          'changedFields', CASE WHEN ${eb.ref('o.sequence')} IS NOT NULL THEN (
            SELECT coalesce(jsonb_agg(key ORDER BY key), '[]'::jsonb)
              FROM jsonb_each(${eb.ref('v.data')}) AS n FULL JOIN jsonb_each(${eb.ref('o.data')}) AS b USING (key)
             WHERE n.value IS DISTINCT FROM b.value AND key <> ALL (${BOOKKEEPING})) END)
          ORDER BY ${eb.ref('v.resource_id')}, ${eb.ref('v.sequence')})`.as('list'),
      )
      .where('v.workspace_id', '=', workspaceId)
      .where((eb) =>
        subject.type === 'post'
          ? eb.and([eb('v.resource_type', '=', 'post'), eb('v.resource_id', '=', subject.id)])
          : eb.and([eb('v.resource_type', '=', 'account'), eb('v.resource_id', 'in', accountIds)]),
      )
      .where(sql<boolean>`${sql.ref('p.read_id')} IS NOT NULL`)
      .where('v.read_at', '=', sql.ref<Date>('p.sent_at'))
      .where('v.read_id', '=', sql.ref<string>('p.read_id'));

    const rows = await db
      .selectFrom(pageRows.as('p'))
      .leftJoinLateral(versions.as('x'), (join) => join.onTrue())
      .select((eb) => [
        'p.at',
        'p.rank',
        'p.key',
        sql<Record<string, unknown>>`CASE WHEN ${eb.ref('p.rank')} = ${rank('reconcile')} THEN ${eb.ref('p.entry')} || jsonb_build_object(
            'readId', ${eb.ref('p.read_id')},
            'changed', CASE WHEN ${eb.ref('x.list')} IS NOT NULL THEN true
                            WHEN NOT (${eb.ref('p.entry')}->>'outcome' = ANY (${WRITES})) THEN false
                            WHEN ${eb.ref('p.read_id')} IS NOT NULL AND ${eb.ref('p.sent_at')} >= ${versionsKeptSince}::timestamptz THEN false END,
            'versions', coalesce(${eb.ref('x.list')}, '[]'::jsonb))
          ELSE ${eb.ref('p.entry')} END`.as('entry'),
      ])
      .orderBy('p.at')
      .orderBy('p.rank')
      .orderBy('p.key')
      .execute();
    return rows.map((row) => ({ at: row.at, rank: Number(row.rank), key: row.key, entry: row.entry }));
  }
}
