import { Expression, RawBuilder, SelectQueryBuilder, sql } from 'kysely';
import type { Db } from '../../database/database.service';
import type { ChangeRow } from '../change-notifications';

/**
 * A row of a mirror write's `changes` CTE as the history keeps it besides: which read wrote the version, and the Pozy
 * events that led to that read (a jsonb array of their ids, null when none is known).
 */
export type VersionedChangeRow = ChangeRow & { read_at: Date; read_id: string | null; event_ids: unknown };

/** Checks, at compile time, that a `changes` CTE's query has the columns the feed, the notifications and the history read. */
export const versionedChangesQuery = <D, T extends keyof D, O extends VersionedChangeRow>(query: SelectQueryBuilder<D, T, O>) => query;

/**
 * The `versioned` CTE of a mirror write: every row of its `changes` CTE kept as a version of its resource, in the
 * write's own statement, so a change and its version commit together. A write that changed nothing has no row in
 * `changes`, and adds no version. The resource's type is the change type's first word (`post`, `account`).
 */
export const recordVersions = (db: Db) =>
  db
    .withTables<{ changes: VersionedChangeRow }>()
    .insertInto('resource_version')
    .columns(['workspace_id', 'resource_type', 'resource_id', 'sequence', 'read_at', 'read_id', 'event_ids', 'data'])
    .expression((eb) =>
      eb
        .selectFrom('changes as c')
        .select((eb) => [
          'c.workspace_id',
          sql<string>`split_part(${eb.ref('c.type')}, '.', 1)`.as('resource_type'),
          'c.resource_id',
          'c.sequence',
          'c.read_at',
          'c.read_id',
          sql<unknown>`${eb.ref('c.event_ids')}`.as('event_ids'),
          'c.resource as data',
        ]),
    )
    // A sequence is a resource's change once: a repeat (which cannot happen) must not fail the mirror's write.
    .onConflict((oc) => oc.doNothing())
    .returning((eb) => eb.lit(1).as('one'));

/** The resource one reconcile reads for: how its events and its read state are found. */
export interface EventsOf {
  workspaceId: Expression<string>;
  /** pozy_event's resource_type: `post`, or `profile` for an account (accounts are read per profile). */
  resourceType: 'post' | 'profile';
  resourceId: Expression<string>;
  /** For an account: only the events naming this account of the profile. */
  accountId?: Expression<string>;
  /** When the read that wrote the version began. */
  readAt: Expression<Date>;
}

/**
 * The ids of the Pozy events that led to the read writing a version, oldest first, as a jsonb array (null when none):
 * those received since the resource's previous reconcile began (reconcile_request.last_read_at, which this read's own
 * reconcile moves only after its write) and before this read began, so Pozy's answer already held what they announced.
 * Walks the resource's (workspace, type, id, timestamp) index from a day before that previous read: Pozy's timestamps
 * bound the walk for a resource with a long history, as traceParentsSince does.
 */
export function eventIdsOf(db: Db, of: EventsOf): RawBuilder<unknown> {
  const key = sql<string>`${sql.lit(`${of.resourceType}:`)} || ${of.resourceId}`;
  const lastRead = sql<Date>`coalesce((${db
    .selectFrom('reconcile_request as r')
    .select('r.last_read_at')
    .where((eb) => eb.and([eb('r.workspace_id', '=', of.workspaceId), eb('r.key', '=', key)]))}), '-infinity'::timestamptz)`;
  const events = db
    .selectFrom('pozy_event as e')
    .select(sql<unknown>`jsonb_agg(${sql.ref('e.id')} ORDER BY ${sql.ref('e.timestamp')}, ${sql.ref('e.id')})`.as('ids'))
    .where((eb) =>
      eb.and([
        eb('e.workspace_id', '=', of.workspaceId),
        eb('e.resource_type', '=', of.resourceType),
        eb('e.resource_id', '=', of.resourceId),
        eb.not(eb.ref('e.test')),
        eb('e.timestamp', '>', sql<Date>`${lastRead} - interval '1 day'`),
        eb('e.received_at', '>=', lastRead),
        eb('e.received_at', '<', of.readAt),
        ...(of.accountId ? [eb(sql<string | null>`${sql.ref('e.payload')}->'account'->>'accountId'`, '=', of.accountId)] : []),
      ]),
    );
  return sql<unknown>`(${events})`;
}
