import { Injectable } from '@nestjs/common';
import {
  type Compilable,
  type CompiledQuery,
  type Expression,
  type ExpressionBuilder,
  expressionBuilder,
  type InferResult,
  type Kysely,
  type SelectQueryBuilder,
  sql,
} from 'kysely';
import { DatabaseService, type Db } from '../database/database.service';
import { plannerRows } from '../database/planner-estimate';
import { statementCompiler } from '../database/precompiled';
import type { DB } from '../generated/kysely/database';
import { GenerateSql, Sample } from '../database/sql-snapshot';

/** Tables and subsets up to this many rows are counted exactly; larger ones get PostgreSQL's estimate. */
export const EXACT_COUNT_LIMIT = 100_000;

/** The last hour's events are counted in one pass when there are at most this many. */
export const HOUR_SCAN_LIMIT = 20_000;

/** Otherwise each five-minute slice is read on its own, up to this many events, and extrapolated past them. */
export const SLICE_SCAN_LIMIT = 1_500;
const SLICE_MS = 5 * 60_000;

/** Events one probe for the newest event reads at most. */
const NEWEST_PROBE_LIMIT = 1_000;

/** How many times a probe for the newest event may halve the window it searches. */
const NEWEST_BISECTIONS = 16;

const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;
const DAY_MS = 24 * HOUR_MS;

/** Widening windows back from now in which to look for the newest event; null: all of them. */
const NEWEST_WINDOWS_MS = [1_000, 10_000, MINUTE_MS, 10 * MINUTE_MS, HOUR_MS, 6 * HOUR_MS, DAY_MS, 7 * DAY_MS, 30 * DAY_MS, 365 * DAY_MS, null];

/** A figure, and whether it is PostgreSQL's estimate rather than exact. */
export interface Estimate<T> {
  value: T;
  estimated: boolean;
}
export type Figure = Estimate<number>;

const exact = <T>(value: T): Estimate<T> => ({ value, estimated: false });

/**
 * What is waiting or stuck, the figures GET /sync/status, the status page and /metrics all show: one definition.
 * Each is a small subset that a partial index covers, counted exactly up to EXACT_COUNT_LIMIT.
 */
export interface BacklogFigures {
  /** Resources waiting for a read from Pozy. */
  pendingReads: Figure;
  /** How long the oldest read still owed (waiting, or failing in the worker's retries) has been owed; null when none. */
  oldestPendingReadMs: number | null;
  /** Dead letters of the delivery queue neither replayed nor resolved, by kind (the ack queue is each replica's spool). */
  deadLetters: { reconcile: Figure; notification: Figure };
  /** Change notifications waiting to be sent, and how long the oldest has waited (null when none). */
  pendingNotifications: Figure;
  oldestPendingNotificationMs: number | null;
  /** Subscriptions the circuit breaker paused, deleted ones aside. */
  pausedSubscriptions: number;
  /** How long the oldest change-feed entry still without a position has waited (null when none): a stuck sequencer. */
  oldestUnplacedChangeMs: number | null;
}

/**
 * What the figures read beside schema.prisma's tables, declared by hand since nothing generates them: graphile-worker's
 * jobs (its own schema, migrated by graphile-worker) and two of PostgreSQL's catalogs. Only the columns read.
 */
type OutsideTables = {
  'graphile_worker._private_jobs': { last_error: string | null };
  pg_class: { oid: number; reltuples: number };
  // bigint: pg answers it as a string.
  pg_stat_all_tables: { relid: number; n_live_tup: string };
};
type Tables = DB & OutsideTables;
type FiguresDb = Kysely<Tables>;

/**
 * Builds and compiles the statements below once, when this file loads (database/precompiled.ts): a status read runs
 * some twenty, and building them anew each time cost about as much as running them. They run on the read's connection.
 */
const compiler: FiguresDb = statementCompiler<Tables>();

/** `SELECT 1 FROM ... WHERE ...`: rows to count, or to ask the planner about. */
type Rows = SelectQueryBuilder<Tables, keyof Tables, { one: 1 }>;
const ONE = sql.lit(1 as const).as('one');

const expressions = expressionBuilder<Tables>();
/** `::integer`: pg answers `count(*)` (bigint) as a string. */
const asInt = (value: Expression<unknown>) => expressions.cast<number>(value, 'integer');
/** `count(*)` of at most EXACT_COUNT_LIMIT + 1 of `rows`: the read stops there. */
const countUpTo = (rows: Rows) => compiler.selectFrom(rows.limit(EXACT_COUNT_LIMIT + 1).as('s')).select((eb) => asInt(eb.fn.countAll()).as('n'));
/** Milliseconds from `at` to now, by the database's clock. */
const msSince = (at: Expression<Date | null>) => sql<number | null>`extract(epoch FROM now() - ${at}) * 1000`;
const hourAgo = sql<Date>`now() - interval '1 hour'`;
const truncated = (unit: 'minute' | 'hour', at: Expression<Date>) => sql<Date>`date_trunc(${sql.lit(unit)}, ${at})`;

type Subset = 'pendingReads' | 'deadReconciles' | 'deadNotifications' | 'pendingNotifications';

// Each subset is read through its partial index (prisma/migrations/20261130120000_status_at_scale).
const SUBSETS: Readonly<Record<Subset, Rows>> = {
  pendingReads: compiler.selectFrom('reconcile_request').select(ONE).where('due_at', 'is not', null),
  deadReconciles: unsettledDeadLetters('reconcile'),
  deadNotifications: unsettledDeadLetters('notification'),
  pendingNotifications: compiler.selectFrom('notification').select(ONE).where('state', '=', 'pending'),
};

function unsettledDeadLetters(kind: 'reconcile' | 'notification'): Rows {
  return compiler
    .selectFrom('dead_letter')
    .select(ONE)
    .where('queue', '=', 'delivery')
    .where('kind', '=', kind)
    .where('replayed_at', 'is', null)
    .where('resolved_at', 'is', null);
}

const upTo = (subset: Subset) => countUpTo(SUBSETS[subset]).$asScalar();

const BACKLOG = compiler
  .selectNoFrom((eb) => [
    upTo('pendingReads').as('pendingReads'),
    // A read handed to the worker that keeps failing (Pozy times out) is still owed: the mirror is behind since it
    // was asked for, however many retries it is into. Each subset has its own partial index.
    eb
      .cast<number | null>(
        eb.fn('greatest', [
          eb
            .selectFrom('reconcile_request')
            .select((r) => msSince(r.fn.min('requested_at')).as('ms'))
            .where('due_at', 'is not', null),
          eb
            .selectFrom('reconcile_request')
            .select((r) => msSince(r.fn.min('requested_at')).as('ms'))
            .where('failing_since', 'is not', null),
        ]),
        'float8',
      )
      .as('oldestPendingReadMs'),
    upTo('deadReconciles').as('deadReconciles'),
    upTo('deadNotifications').as('deadNotifications'),
    upTo('pendingNotifications').as('pendingNotifications'),
    // The oldest pending notification is looked up per subscription: the index leads with (state, subscription_id), so
    // each lookup reads one entry, where one over the whole subset would read all of it.
    eb
      .cast<number | null>(
        eb
          .selectFrom('subscription as s')
          .crossJoinLateral((lateral) =>
            lateral
              .selectFrom('notification as n')
              .select('n.created_at')
              .where('n.state', '=', 'pending')
              .whereRef('n.subscription_id', '=', 's.id')
              .orderBy('n.created_at')
              .limit(1)
              .as('oldest'),
          )
          .select((o) => msSince(o.fn.min('oldest.created_at')).as('ms')),
        'float8',
      )
      .as('oldestPendingNotificationMs'),
    asInt(
      eb
        .selectFrom('subscription')
        .select((s) => s.fn.countAll().as('n'))
        .where('paused_at', 'is not', null)
        .where('deleted_at', 'is', null),
    ).as('pausedSubscriptions'),
    // The sequencer places entries in id order, through the partial index of the unplaced ones.
    eb
      .cast<number | null>(
        eb
          .selectFrom('change')
          .select((c) => msSince(c.ref('changed_at')).as('ms'))
          .where('position', 'is', null)
          .orderBy('id')
          .limit(1),
        'float8',
      )
      .as('oldestUnplacedChangeMs'),
  ])
  .compile();

/**
 * Per table: the figure of all its rows, or of the rows outside a subset (`rest`), and the subset's figure. A
 * subset whose partial index exists (`indexed`) is counted through it up to EXACT_COUNT_LIMIT however large the
 * table: deleted posts and removed accounts are few, and PostgreSQL's guess for them is worthless before ANALYZE.
 */
export interface TableFigures {
  posts: Figure;
  deletedPosts: Figure;
  accounts: Figure;
  removedAccounts: Figure;
  storedEvents: Figure;
  jobs: Figure;
  failingJobs: Figure;
}

interface TableShape {
  /** As `regclass::text` names it: schema-qualified only off the search path. */
  table: 'post' | 'account' | 'pozy_event' | 'graphile_worker._private_jobs';
  all?: keyof TableFigures;
  rest?: keyof TableFigures;
  subset?: { name: keyof TableFigures; indexed: boolean };
  /** Every row, to ask the planner about. */
  everyRow: CompiledQuery;
  /** The subset's rows: to ask the planner about, and counted up to the cap. */
  subsetRows?: { rows: CompiledQuery; upTo: CompiledQuery<{ n: number }> };
  /** Rows of the subset that are no resource at all, left out of both figures: counted up to the cap. */
  unseenUpTo?: CompiledQuery<{ n: number }>;
  /** The table's rows, its subset's and its unseen rows', counted in one pass (0 for what it lacks). */
  counts: CompiledQuery<{ rows: number; subset: number; unseen: number }>;
}

function statements(
  everyRow: Rows,
  subsetRows: Rows | null,
  counts: Compilable<{ rows: number; subset: number; unseen: number }>,
  unseenRows?: Rows,
) {
  return {
    everyRow: everyRow.compile(),
    ...(subsetRows ? { subsetRows: { rows: subsetRows.compile(), upTo: countUpTo(subsetRows).compile() } } : {}),
    ...(unseenRows ? { unseenUpTo: countUpTo(unseenRows).compile() } : {}),
    counts: counts.compile(),
  };
}

// A tombstone (a 404 for a post the mirror never held) is a deleted row with no Pozy version: no endpoint answers it,
// so it is neither a post nor a deleted post. Counted through its own partial index (post_tombstone_idx).
const isTombstone = (eb: ExpressionBuilder<Tables, 'post'>) => eb.and([eb('deleted_at', 'is not', null), eb('pozy_updated_at', 'is', null)]);

const TABLE_SHAPES: readonly TableShape[] = [
  {
    table: 'post',
    rest: 'posts',
    subset: { name: 'deletedPosts', indexed: true },
    ...statements(
      compiler.selectFrom('post').select(ONE),
      compiler.selectFrom('post').select(ONE).where('deleted_at', 'is not', null),
      compiler
        .selectFrom('post')
        .select((eb) => [
          asInt(eb.fn.countAll()).as('rows'),
          asInt(eb.fn.countAll().filterWhere('deleted_at', 'is not', null)).as('subset'),
          asInt(eb.fn.countAll().filterWhere(isTombstone)).as('unseen'),
        ]),
      compiler.selectFrom('post').select(ONE).where(isTombstone),
    ),
  },
  {
    table: 'account',
    rest: 'accounts',
    subset: { name: 'removedAccounts', indexed: true },
    ...statements(
      compiler.selectFrom('account').select(ONE),
      compiler.selectFrom('account').select(ONE).where('removed_at', 'is not', null),
      compiler
        .selectFrom('account')
        .select((eb) => [
          asInt(eb.fn.countAll()).as('rows'),
          asInt(eb.fn.countAll().filterWhere('removed_at', 'is not', null)).as('subset'),
          eb.lit(0).as('unseen'),
        ]),
    ),
  },
  {
    table: 'pozy_event',
    all: 'storedEvents',
    ...statements(
      compiler.selectFrom('pozy_event').select(ONE),
      null,
      compiler.selectFrom('pozy_event').select((eb) => [asInt(eb.fn.countAll()).as('rows'), eb.lit(0).as('subset'), eb.lit(0).as('unseen')]),
    ),
  },
  // graphile-worker deletes the jobs that succeed: normally few, but a stalled worker lets them pile up.
  {
    table: 'graphile_worker._private_jobs',
    all: 'jobs',
    subset: { name: 'failingJobs', indexed: false },
    ...statements(
      compiler.selectFrom('graphile_worker._private_jobs').select(ONE),
      compiler.selectFrom('graphile_worker._private_jobs').select(ONE).where('last_error', 'is not', null),
      compiler
        .selectFrom('graphile_worker._private_jobs')
        .select((eb) => [
          asInt(eb.fn.countAll()).as('rows'),
          asInt(eb.fn.countAll().filterWhere('last_error', 'is not', null)).as('subset'),
          eb.lit(0).as('unseen'),
        ]),
    ),
  },
];

// How many rows each table holds by PostgreSQL's bookkeeping: its analyzed density scaled to its size now, or,
// for a table never analyzed (reltuples -1: a first import a moment ago), the live rows its statistics counted.
// `mostPlannedRows`: the planner's estimate of a whole table is its pages (10 at least while it was never vacuumed)
// times a density of at most (block size - 24-byte page header) / 28 bytes (tuple header and line pointer) per row;
// a table whose pages cannot hold EXACT_COUNT_LIMIT rows by that bound is counted without asking the planner.
const TABLE_SIZES = compiler
  .selectFrom('pg_class as c')
  .leftJoin('pg_stat_all_tables as s', 's.relid', 'c.oid')
  .select((eb) => [
    eb.cast<string>(eb.cast('c.oid', sql`regclass`), 'text').as('table'),
    eb.cast<number>('c.reltuples', 'float8').as('reltuples'),
    eb.cast<number>(eb.fn.coalesce('s.n_live_tup', eb.lit(0)), 'float8').as('liveRows'),
    sql<number>`greatest(pg_relation_size(${eb.ref('c.oid')}) / current_setting('block_size')::float8, 10)
                * (current_setting('block_size')::float8 - 24) / 28`.as('mostPlannedRows'),
  ])
  .where('c.oid', '=', (eb) => eb.fn.any(eb.cast<number[]>(eb.val(TABLE_SHAPES.map((shape) => shape.table)), sql`regclass[]`)))
  .compile();

export interface MinuteCount {
  minute: Date;
  count: number;
}

/** Events received lately, from BRIN range scans of received_at whose reads are bounded. */
export interface RecentEvents {
  /** Received in the hour before now. */
  lastHour: Figure;
  /** Sixty one-minute buckets ending with the current one (database clock); `estimated` when any of them is. */
  perMinute: Estimate<MinuteCount[]>;
  lastReceivedAt: Estimate<Date | null>;
}

// Sixty-one buckets: the first holds the end of the minute an hour ago, the other sixty are the chart's.
const HOUR_BY_MINUTE = compiler
  .with('recent', (w) =>
    w
      .selectFrom('pozy_event')
      .select('received_at')
      .where('received_at', '>', hourAgo)
      .limit(HOUR_SCAN_LIMIT + 1),
  )
  .with('counted', (w) =>
    w
      .selectFrom('recent')
      .select((eb) => [
        truncated('minute', eb.ref('received_at')).as('minute'),
        asInt(eb.fn.countAll()).as('count'),
        eb.fn.max('received_at').as('newest'),
      ])
      .groupBy((eb) => truncated('minute', eb.ref('received_at'))),
  )
  .with('m', (w) =>
    w.selectNoFrom(
      sql<Date>`generate_series(date_trunc('minute', now() - interval '1 hour'), date_trunc('minute', now()), interval '1 minute')`.as('minute'),
    ),
  )
  .selectFrom('m')
  .leftJoin('counted as c', 'c.minute', 'm.minute')
  .select((eb) => ['m.minute', asInt(eb.fn.coalesce('c.count', eb.lit(0))).as('count'), 'c.newest', eb.fn<Date>('now').as('now')])
  .orderBy('m.minute')
  .compile();
type Bucket = InferResult<typeof HOUR_BY_MINUTE>[number];

// A busy hour: each five-minute slice (on the clock's 5-minute marks) is read on its own, at most SLICE_SCAN_LIMIT + 1
// events of it, counted by minute (minutes without events have no row). Slices, not minutes: a BRIN scan reads whole
// 128-page ranges, which a minute's events may not fill.
const EACH_SLICE = (() => {
  const slices = compiler.selectNoFrom(
    sql<Date>`generate_series(date_bin('5 minutes', now() - interval '1 hour', timestamptz '2000-01-01 00:00Z'), now(), interval '5 minutes')`.as(
      'slice',
    ),
  );
  return compiler
    .selectFrom(slices.as('sl'))
    .crossJoinLateral((eb) =>
      eb
        .selectFrom(
          eb
            .selectFrom('pozy_event')
            .select('received_at')
            .where('received_at', '>=', eb.ref('sl.slice'))
            .where('received_at', '<', sql<Date>`${eb.ref('sl.slice')} + interval '5 minutes'`)
            .where('received_at', '>', hourAgo)
            .limit(SLICE_SCAN_LIMIT + 1)
            .as('sample'),
        )
        .select((s) => [
          truncated('minute', s.ref('sample.received_at')).as('minute'),
          asInt(s.fn.countAll()).as('count'),
          s.fn.max('sample.received_at').as('newest'),
        ])
        .groupBy((s) => truncated('minute', s.ref('sample.received_at')))
        .as('b'),
    )
    .select((eb) => ['sl.slice', 'b.minute', 'b.count', 'b.newest', eb.fn<Date>('now').as('now')])
    .orderBy('b.minute')
    .compile();
})();
type SliceMinute = InferResult<typeof EACH_SLICE>[number];

/** The one row `query` answers. */
async function first<R>(db: FiguresDb, query: CompiledQuery<R>): Promise<R> {
  const { rows } = await db.executeQuery(query);
  if (rows.length === 0) throw new Error('A figure read answered no row');
  return rows[0];
}

/** How many events were received after `after` (all of them: null), up to NEWEST_PROBE_LIMIT + 1, and the newest read. */
function probeNewest(db: FiguresDb, after: Date | null) {
  return db
    .selectFrom((eb) =>
      eb
        .selectFrom('pozy_event')
        .select('received_at')
        .where('received_at', '>', eb.cast<Date>(eb.val(after ?? '-infinity'), 'timestamptz'))
        .limit(NEWEST_PROBE_LIMIT + 1)
        .as('s'),
    )
    .select((eb) => [asInt(eb.fn.countAll()).as('count'), eb.fn.max<Date | null>('s.received_at').as('newest')])
    .executeTakeFirstOrThrow();
}

const GAPS = compiler
  .selectFrom('pozy_event')
  .select((eb) => [truncated('hour', eb.ref('timestamp')).as('hour'), asInt(eb.fn.countAll()).as('events')])
  .where('recovered_by', 'is not', null)
  .where('timestamp', '>', sql<Date>`now() - interval '48 hours'`)
  .groupBy((eb) => truncated('hour', eb.ref('timestamp')))
  .orderBy((eb) => truncated('hour', eb.ref('timestamp')))
  .compile();

const LAST_SYNCED = compiler
  .selectNoFrom((eb) =>
    eb
      .fn<Date | null>('greatest', [
        eb.selectFrom('post').select((p) => p.fn.max('synced_at').as('m')),
        eb.selectFrom('account').select((a) => a.fn.max('synced_at').as('m')),
      ])
      .as('lastSyncedAt'),
  )
  .compile();

/** Everything GET /sync/status and the status page read from the database beside the subscribers and backfill runs. */
export interface StatusFigures {
  backlog: BacklogFigures;
  tables: TableFigures;
  recent: RecentEvents;
  /** The last write of any mirrored row. */
  lastSyncedAt: Date | null;
  /** Events Pozy logged that never reached us (recovered by the backfill), by the hour they happened: the last 48 h. */
  gaps: Array<{ hour: Date; events: number }>;
}

/** Each statement of a status snapshot is cut after this: the figures are bounded reads, and one this slow waits on a lock or a swamped server. */
export const STATUS_STATEMENT_TIMEOUT_MS = 2_000;

/** pg_stat_activity's application_name of a connection while it reads a status snapshot. */
export const STATUS_CONNECTION_NAME = 'pozy-sync status';

/**
 * The figures of GET /sync/status, the status page and /metrics: the one place that defines and reads them. None
 * counts a large table: past EXACT_COUNT_LIMIT rows a count is PostgreSQL's estimate and says so, subsets are read
 * through partial indexes, maxima through indexes, and recent events through bounded BRIN range scans.
 */
@Injectable()
export class SyncFiguresRepository {
  constructor(private readonly database: DatabaseService) {}

  /**
   * Runs `work` on one connection, in one read-only snapshot, so the status holds one connection of the pool that
   * also serves webhooks, and its figures agree with each other; the other repositories the status reads join it
   * through their `db` parameter. Each statement is cut after STATUS_STATEMENT_TIMEOUT_MS (common/database-errors.ts), and
   * pg_stat_activity names the connection STATUS_CONNECTION_NAME meanwhile.
   * Without JIT: the planner's cost of a bounded scan of a large table can pass jit_above_cost, and compiling then
   * takes hundreds of milliseconds, far longer than the scan.
   */
  @GenerateSql({ params: [(db: Db) => db.selectFrom('post').select('id').execute()] })
  snapshot<T>(work: (db: Db) => Promise<T>): Promise<T> {
    return this.database.db.connection().execute(async (connection) => {
      // One round trip for all: a statement string without parameters may hold several (pg's simple protocol).
      await sql`BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SET LOCAL jit = off;
                SET LOCAL statement_timeout = ${sql.lit(STATUS_STATEMENT_TIMEOUT_MS)};
                SET LOCAL application_name = ${sql.lit(STATUS_CONNECTION_NAME)}`.execute(connection);
      try {
        const result = await work(connection);
        await sql`COMMIT`.execute(connection);
        return result;
      } catch (error) {
        await sql`ROLLBACK`.execute(connection).catch(() => undefined);
        throw error;
      }
    });
  }

  /**
   * The notification objective's lag: how long the oldest change notification still owed to a healthy subscriber
   * (active, neither paused nor failing) at its first attempt has been owed since its write, and to which subscription;
   * null when none is. Like `subscriber="healthy"` of pozy_sync_write_to_notification_seconds: a notification retried
   * after a failed attempt, and a replay, are not counted. One entry of notification_unsettled_idx per subscription.
   */
  @GenerateSql({ params: [] })
  async oldestOwedToHealthy(): Promise<{ subscriptionId: string; ms: number } | null> {
    const row = await this.database.db
      .selectFrom('subscription as s')
      .crossJoinLateral((eb) =>
        eb
          .selectFrom('notification as n')
          .select('n.created_at')
          .where('n.state', '=', 'pending')
          .whereRef('n.subscription_id', '=', 's.id')
          .where('n.attempts', '=', 0)
          .where('n.replay_count', '=', 0)
          .orderBy('n.created_at')
          .limit(1)
          .as('oldest'),
      )
      .select((eb) => ['s.id as subscriptionId', eb.cast<number>(msSince(eb.ref('oldest.created_at')), 'float8').as('ms')])
      .where('s.active', '=', true)
      .where('s.deleted_at', 'is', null)
      .where('s.paused_at', 'is', null)
      .where('s.failing_since', 'is', null)
      .orderBy('oldest.created_at')
      .limit(1)
      .executeTakeFirst();
    return row ? { subscriptionId: row.subscriptionId, ms: Math.max(0, row.ms) } : null;
  }

  /** The status's figures, in the snapshot `db` reads (snapshot()). */
  @GenerateSql({ params: [Sample.DB] })
  async figuresOf(db: Db): Promise<StatusFigures> {
    const figures = db.withTables<OutsideTables>();
    return {
      backlog: await this.backlogOf(figures),
      tables: await this.tablesOf(figures),
      recent: await this.recentOf(figures),
      lastSyncedAt: (await first(figures, LAST_SYNCED)).lastSyncedAt,
      gaps: (await figures.executeQuery(GAPS)).rows,
    };
  }

  @GenerateSql({ none: 'a helper: its statements show under the methods that call it' })
  private async backlogOf(db: FiguresDb): Promise<BacklogFigures> {
    const row = await first(db, BACKLOG);
    const counts = await this.completeCounts(db, row);
    return {
      pendingReads: counts.pendingReads,
      oldestPendingReadMs: row.oldestPendingReadMs,
      deadLetters: { reconcile: counts.deadReconciles, notification: counts.deadNotifications },
      pendingNotifications: counts.pendingNotifications,
      oldestPendingNotificationMs: row.oldestPendingNotificationMs,
      pausedSubscriptions: row.pausedSubscriptions,
      oldestUnplacedChangeMs: row.oldestUnplacedChangeMs,
    };
  }

  /** Rows of the mirror, of stored events and of graphile-worker's jobs. */
  @GenerateSql({ none: 'a helper: its statements show under the methods that call it' })
  private async tablesOf(db: FiguresDb): Promise<TableFigures> {
    const { rows: sizes } = await db.executeQuery(TABLE_SIZES);
    const figures = {} as TableFigures;
    for (const shape of TABLE_SHAPES) {
      const size = sizes.find((row) => row.table === shape.table || row.table.endsWith(`.${shape.table}`));
      // Each EXPLAIN is a round trip of its own: asked once, and only when its estimate is wanted.
      let planned: number | undefined;
      const plannedRows = async () => (planned ??= (await plannerRows(db, [shape.everyRow]))[0]);
      // Never analyzed: the rows its statistics counted. Otherwise the planner's estimate.
      const rows = size && size.reltuples < 0 && size.liveRows > 0 ? Math.round(size.liveRows) : null;
      const small =
        rows !== null
          ? rows < EXACT_COUNT_LIMIT
          : (size?.mostPlannedRows ?? Infinity) < EXACT_COUNT_LIMIT || (await plannedRows()) < EXACT_COUNT_LIMIT;
      if (small) {
        // A small table's figures, counted in one pass.
        const counted = await first(db, shape.counts);
        if (shape.all) figures[shape.all] = exact(counted.rows);
        if (shape.rest) figures[shape.rest] = exact(counted.rows - counted.subset);
        if (shape.subset) figures[shape.subset.name] = exact(counted.subset - counted.unseen);
        continue;
      }
      const tableRows = rows ?? (await plannedRows());
      let subset: Figure = { value: 0, estimated: false };
      if (shape.subset && shape.subsetRows) {
        const capped = shape.subset.indexed ? (await first(db, shape.subsetRows.upTo)).n : EXACT_COUNT_LIMIT + 1;
        // Past the cap, PostgreSQL's estimate of the subset, scaled like the table's, and never below the cap.
        const plannedSubset = capped <= EXACT_COUNT_LIMIT ? 0 : (await plannerRows(db, [shape.subsetRows.rows]))[0];
        subset =
          capped <= EXACT_COUNT_LIMIT
            ? exact(capped)
            : { value: Math.max(capped, Math.round((plannedSubset * tableRows) / Math.max(1, await plannedRows()))), estimated: true };
        // Few (one per 404 for an id never held), and read through their own index.
        const unseen = shape.unseenUpTo ? (await first(db, shape.unseenUpTo)).n : 0;
        figures[shape.subset.name] = { ...subset, value: Math.max(0, subset.value - unseen) };
      }
      if (shape.all) figures[shape.all] = { value: tableRows, estimated: true };
      if (shape.rest) figures[shape.rest] = { value: Math.max(0, tableRows - subset.value), estimated: true };
    }
    return figures;
  }

  @GenerateSql({ none: 'a helper: its statements show under the methods that call it' })
  private async recentOf(db: FiguresDb): Promise<RecentEvents> {
    const { rows: hour } = await db.executeQuery(HOUR_BY_MINUTE);
    const now = hour[0].now;
    const total = hour.reduce((sum, b) => sum + b.count, 0);
    if (total <= HOUR_SCAN_LIMIT) {
      const newest = hour.findLast((b) => b.newest !== null)?.newest ?? null;
      return {
        lastHour: exact(total),
        perMinute: exact(chart(hour)),
        lastReceivedAt: newest ? exact(newest) : await this.newestReceivedAt(db, now, new Date(now.getTime() - HOUR_MS)),
      };
    }
    const { rows: sampled } = await db.executeQuery(EACH_SLICE);
    const { buckets, estimated } = bySlice(hour, sampled);
    // The newest event read is the newest of all when its slice was read whole; the later slices held none.
    const last = sampled.at(-1);
    const lastSliceRead = sampled.filter((m) => m.slice.getTime() === last?.slice.getTime()).reduce((sum, m) => sum + m.count, 0);
    const emptyAfter = last ? new Date(Math.min(now.getTime(), last.slice.getTime() + SLICE_MS)) : now;
    return {
      lastHour: { value: buckets.reduce((sum, b) => sum + b.count, 0), estimated },
      perMinute: { value: chart(buckets), estimated },
      lastReceivedAt: last?.newest && lastSliceRead <= SLICE_SCAN_LIMIT ? exact(last.newest) : await this.newestReceivedAt(db, now, emptyAfter),
    };
  }

  /** Counts that reached the limit become the planner's estimate, which is never taken below the count. */
  @GenerateSql({ none: 'a helper: its statements show under the methods that call it' })
  private async completeCounts(db: FiguresDb, row: Record<Subset, number>): Promise<Record<Subset, Figure>> {
    const over = (Object.keys(SUBSETS) as Subset[]).filter((subset) => row[subset] > EXACT_COUNT_LIMIT);
    const estimates = await plannerRows(
      db,
      over.map((subset) => SUBSETS[subset].compile()),
    );
    const counts = {} as Record<Subset, Figure>;
    for (const subset of Object.keys(SUBSETS) as Subset[]) counts[subset] = exact(row[subset]);
    over.forEach((subset, i) => (counts[subset] = { value: Math.max(estimates[i], row[subset]), estimated: true }));
    return counts;
  }

  /**
   * The newest received_at, without a btree: rows arrive in received_at order, so a window back from now is a BRIN
   * range scan of the table's end. Windows widen until one holds an event; one holding too many to read is halved
   * towards its newer end. `emptyAfter`: no event was received after it. Approximate (a lower bound) only when the
   * halvings run out, for an unusually dense burst.
   */
  @GenerateSql({ none: 'a helper: its statements show under the methods that call it' })
  private async newestReceivedAt(db: FiguresDb, now: Date, emptyAfter: Date): Promise<Estimate<Date | null>> {
    let empty = emptyAfter;
    for (const span of NEWEST_WINDOWS_MS) {
      const from = span === null ? null : new Date(now.getTime() - span);
      if (from && from >= empty) continue;
      const probe = await probeNewest(db, from);
      if (probe.count === 0) {
        if (from === null) return exact(null);
        empty = from;
      } else if (probe.count <= NEWEST_PROBE_LIMIT) {
        return exact(probe.newest);
      } else {
        // More events after `from` than a probe reads; the newest seen so far is a lower bound.
        let [older, newer, best] = [from ?? probe.newest!, empty, probe.newest!];
        for (let i = 0; i < NEWEST_BISECTIONS; i++) {
          const middle = new Date((older.getTime() + newer.getTime()) / 2);
          const half = await probeNewest(db, middle);
          if (half.count === 0) newer = middle;
          else if (half.count <= NEWEST_PROBE_LIMIT) return exact(half.newest);
          else [older, best] = [middle, half.newest! > best ? half.newest! : best];
        }
        return { value: best, estimated: true };
      }
    }
    return exact(null);
  }
}

/** The chart's sixty buckets: all but the first, which holds only the end of the minute an hour ago. */
function chart(buckets: Bucket[]): MinuteCount[] {
  return buckets.slice(1).map(({ minute, count }) => ({ minute, count }));
}

/**
 * The hour's sixty-one buckets from the five-minute slices read one by one. A slice read whole is exact. One that held
 * more events than were read: rows lie in the order they arrived, so those read came first; the minutes they
 * covered are exact, and the rest of the slice goes at the rate they came in.
 */
function bySlice(hour: Bucket[], sampled: SliceMinute[]): { buckets: Bucket[]; estimated: boolean } {
  const counts = new Map(hour.map((b) => [b.minute.getTime(), 0]));
  const now = hour[0].now.getTime();
  const hourAgo = now - HOUR_MS;
  let estimated = false;
  for (const slice of new Set(sampled.map((m) => m.slice.getTime()))) {
    const minutes = sampled.filter((m) => m.slice.getTime() === slice);
    for (const m of minutes) counts.set(m.minute.getTime(), (counts.get(m.minute.getTime()) ?? 0) + m.count);
    const read = minutes.reduce((sum, m) => sum + m.count, 0);
    if (read <= SLICE_SCAN_LIMIT) continue;
    estimated = true;
    const start = Math.max(slice, hourAgo);
    const end = Math.min(slice + SLICE_MS, now);
    const reached = Math.max(...minutes.map((m) => m.newest.getTime()));
    if (reached <= start) continue;
    const rate = read / (reached - start);
    // What the slice held after the last event read, spread over the minutes by the time each spends there.
    for (let minute = Math.floor(reached / MINUTE_MS) * MINUTE_MS; minute < end; minute += MINUTE_MS) {
      const overlap = Math.min(minute + MINUTE_MS, end) - Math.max(minute, reached);
      if (overlap > 0 && counts.has(minute)) counts.set(minute, counts.get(minute)! + Math.round(rate * overlap));
    }
  }
  return { buckets: hour.map((b) => ({ ...b, count: counts.get(b.minute.getTime()) ?? 0 })), estimated };
}
