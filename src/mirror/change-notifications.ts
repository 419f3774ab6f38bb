import { Expression, Selectable, SelectQueryBuilder, sql } from 'kysely';
import type { Db } from '../database/database.service';
import { isoText } from '../database/sql-expressions';
import type { DB } from '../generated/kysely/database';
import type { RecordedEntry } from '../changes/record-changes';
import { activeTraceparent } from '../tracing/trace-context';
import { recordVersions, VersionedChangeRow } from './history/record-versions';
import type { MirrorTable, WrittenQuery } from './mirror-write';

/**
 * The feed, history and outbox half of a mirror write, as Kysely pieces of the write's own statement (fanOut): the
 * write's CTEs `written` (the rows the guarded write touched) and `changes` (one row per resource whose mirrored state
 * changed) feed a CTE `recorded` that appends each change to the change feed (GET /changes), a CTE `versioned` that
 * keeps it as a version (history/record-versions.ts) and a CTE `notified` that inserts one notification per matching
 * active subscription, so all three commit in the very statement that changed the mirror. Built per write: a
 * notification carries the `traceparent` of the span that wrote it.
 */

/**
 * A row of a mirror write's `changes` CTE, as the feed keeps it: `resource` is the post or account exactly as
 * GET /posts/:id or GET /accounts/:id answers it right after the change.
 */
export type FeedChange = Pick<Selectable<DB['change']>, 'workspace_id' | 'type' | 'resource_id' | 'sequence' | 'profile_ids' | 'platforms'> & {
  resource: Selectable<DB['change']>['data'];
};

/** A row of a write's `changes` CTE: the change as the feed keeps it, and what notifications add to it. */
export type ChangeRow = FeedChange & Pick<Selectable<DB['notification']>, 'resource_key' | 'pozy_updated_at'>;

/** What the answer reads of a write's `written` CTE. */
type WrittenRow = Pick<Selectable<DB['post']>, 'changed_by' | 'read_id'> & { inserted: boolean };

/** Checks, at compile time, that a `changes` CTE's query has the columns `recordChanges` and `notifySubscribers` read. */
export const changesQuery = <D, T extends keyof D, O extends ChangeRow>(query: SelectQueryBuilder<D, T, O>) => query;

/**
 * The `recorded` CTE of a mirror write: every row of its `changes` CTE appended to the change feed, in the write's
 * own statement, so a change and its feed entry commit together or not at all. The entry has no position yet: the
 * sequencer gives it one once the write has committed. Each row answers what RecordedEntry reads of it.
 */
export const recordChanges = (db: Db) =>
  db
    .withTables<{ changes: FeedChange }>()
    .insertInto('change')
    .columns(['workspace_id', 'type', 'resource_id', 'sequence', 'profile_ids', 'platforms', 'data'])
    .expression((eb) =>
      eb
        .selectFrom('changes as c')
        .select(['c.workspace_id', 'c.type', 'c.resource_id', 'c.sequence', 'c.profile_ids', 'c.platforms', 'c.resource as data']),
    )
    .returning(['id', 'workspace_id', 'type', 'resource_id', 'sequence']);

/**
 * The `notified` CTE: a notification for each active subscription that asks for each row of `changes`. Its body's
 * `data` is `{ id, sequence, pozyUpdatedAt, post | account }`, the resource being the feed's.
 */
export const notifySubscribers = (db: Db) =>
  db
    .withTables<{ changes: ChangeRow }>()
    .insertInto('notification')
    .columns(['id', 'subscription_id', 'workspace_id', 'type', 'resource_key', 'sequence', 'pozy_updated_at', 'data', 'trace_parent'])
    .expression((eb) =>
      eb
        .selectFrom('changes as c')
        .innerJoin('subscription as s', (join) =>
          join.on((eb) =>
            eb.and([
              eb.ref('s.active'),
              eb('s.deleted_at', 'is', null),
              eb('c.type', '=', eb.fn.any('s.event_types')),
              eb.or([eb(eb.fn('cardinality', ['s.workspace_ids']), '=', eb.lit(0)), eb('c.workspace_id', '=', eb.fn.any('s.workspace_ids'))]),
              eb.or([eb(eb.fn('cardinality', ['s.profile_ids']), '=', eb.lit(0)), eb('s.profile_ids', '&&', eb.ref('c.profile_ids'))]),
              eb.or([eb(eb.fn('cardinality', ['s.platforms']), '=', eb.lit(0)), eb('s.platforms', '&&', eb.ref('c.platforms'))]),
            ]),
          ),
        )
        .select((eb) => [
          sql<string>`'msg_' || replace(gen_random_uuid()::text, '-', '')`.as('id'),
          's.id as subscription_id',
          'c.workspace_id',
          'c.type',
          'c.resource_key',
          'c.sequence',
          'c.pozy_updated_at',
          // The resource's key is the type's first word: `post` or `account`.
          sql<unknown>`jsonb_build_object('id', ${eb.ref('c.resource_id')}, 'workspaceId', ${eb.ref('c.workspace_id')}, 'sequence', ${eb.ref('c.sequence')},
            'pozyUpdatedAt', ${isoText(eb.ref('c.pozy_updated_at'))}, split_part(${eb.ref('c.type')}, '.', 1), ${eb.ref('c.resource')})`.as('data'),
          // The write's span: each delivery attempt, on any replica, is a span of its trace.
          sql<string | null>`${activeTraceparent()}::text`.as('trace_parent'),
        ]),
    )
    .returning((eb) => eb.lit(1).as('one'));

/** Feed entries a write answers for their spans, at most: one resource's are a handful; a page's are counted, not each traced. */
export const TRACED_ENTRIES = 32;

/** A `recorded` row as the statement answers it. */
type RecordedRow = Pick<Selectable<DB['change']>, 'id' | 'workspace_id' | 'type' | 'resource_id' | 'sequence'>;

/**
 * The statement's answer once `written`, `changes`, `recorded` and `notified` exist. `entries`: inside a recording span
 * (tracing on), the first TRACED_ENTRIES feed entries appended, for the caller's `feed entry` spans; otherwise none,
 * at no cost.
 */
export const fanOutResult = (db: Db) => {
  const ctes = db.withTables<{ written: WrittenRow; notified: { one: number }; recorded: RecordedRow }>();
  const written = ctes.selectFrom('written');
  const entries =
    activeTraceparent() === null
      ? sql<RecordedEntry[]>`'[]'::jsonb`.as('entries')
      : ctes
          .selectFrom((eb) => eb.selectFrom('recorded').selectAll().orderBy('id').limit(TRACED_ENTRIES).as('r'))
          .select((eb) =>
            eb.fn
              .coalesce(
                eb.fn
                  .agg<RecordedEntry[]>('jsonb_agg', [
                    eb.fn('jsonb_build_object', [
                      sql.lit('id'),
                      eb.cast('r.id', 'text'),
                      sql.lit('workspaceId'),
                      'r.workspace_id',
                      sql.lit('type'),
                      'r.type',
                      sql.lit('resourceId'),
                      'r.resource_id',
                      sql.lit('sequence'),
                      'r.sequence',
                    ]),
                  ])
                  .orderBy('r.id'),
                sql<RecordedEntry[]>`'[]'::jsonb`,
              )
              .as('entries'),
          )
          .$asScalar()
          .as('entries');
  return [
    written
      .select((eb) => eb.cast<number>(eb.fn.countAll(), 'integer').as('n'))
      .$asScalar()
      .as('written'),
    written
      .select((eb) =>
        eb
          .cast<number>(
            eb.fn.countAll().filterWhere((eb) => eb.ref('inserted')),
            'integer',
          )
          .as('n'),
      )
      .$asScalar()
      .as('created'),
    written
      .select((eb) => eb.cast<number>(eb.fn.countAll().filterWhereRef('changed_by', '=', 'read_id'), 'integer').as('n'))
      .$asScalar()
      .as('changed'),
    ctes
      .selectFrom('recorded')
      .select((eb) => eb.cast<number>(eb.fn.countAll(), 'integer').as('n'))
      .$asScalar()
      .as('recorded'),
    ctes
      .selectFrom('notified')
      .select((eb) => eb.cast<number>(eb.fn.countAll(), 'integer').as('n'))
      .$asScalar()
      .as('notified'),
    entries,
  ] as const;
};

/**
 * `written` (the write, returning the rows it touched) with the feed entries, versions and notifications of what it
 * changed, in one statement: `changes` (one row per resource whose mirrored state changed, the resource as its
 * endpoint answers it, selected from `written`) feeds `recorded`, `versioned` and `notified`. Answers fanOutResult's
 * figures; a caller adds what else it reads of the CTEs with `.select(...)`.
 */
export const fanOut = <T extends MirrorTable>(db: Db, written: WrittenQuery<T>, changes: Expression<VersionedChangeRow>) =>
  db
    .with('written', () => written)
    .with('changes', () => changes)
    .with('recorded', () => recordChanges(db))
    .with('versioned', () => recordVersions(db))
    .with('notified', () => notifySubscribers(db))
    .selectNoFrom(fanOutResult(db));
