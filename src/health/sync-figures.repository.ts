import { Injectable } from '@nestjs/common';
import type { PoolClient } from 'pg';
import { DatabaseService } from '../database/database.service';
import { plannerRows } from '../database/planner-estimate';

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
  /** Resources waiting for a read from Pozy, and how long the oldest has waited (null when none). */
  pendingReads: Figure;
  oldestPendingReadMs: number | null;
  /** Dead letters of the delivery queue neither replayed nor resolved, by kind (the ack queue is each replica's spool). */
  deadLetters: { reconcile: Figure; notification: Figure };
  /** Change notifications waiting to be sent, and how long the oldest has waited (null when none). */
  pendingNotifications: Figure;
  oldestPendingNotificationMs: number | null;
  /** Subscriptions the circuit breaker paused, deleted ones aside. */
  pausedSubscriptions: number;
}

// Each subset is read through its partial index (prisma/migrations/20261130120000_status_at_scale).
const SUBSETS = {
  pendingReads: 'SELECT 1 FROM reconcile_request WHERE due_at IS NOT NULL',
  deadReconciles: `SELECT 1 FROM dead_letter
                    WHERE queue = 'delivery' AND kind = 'reconcile' AND replayed_at IS NULL AND resolved_at IS NULL`,
  deadNotifications: `SELECT 1 FROM dead_letter
                       WHERE queue = 'delivery' AND kind = 'notification' AND replayed_at IS NULL AND resolved_at IS NULL`,
  pendingNotifications: "SELECT 1 FROM notification WHERE state = 'pending'",
} as const;
type Subset = keyof typeof SUBSETS;

const upTo = (subset: Subset) => `(SELECT count(*) FROM (${SUBSETS[subset]} LIMIT $1) s)::int`;

// The oldest pending notification is looked up per subscription: the index leads with (state, subscription_id), so
// each lookup reads one entry, where one over the whole subset would read all of it.
const BACKLOG = `
SELECT ${upTo('pendingReads')} AS "pendingReads",
       (SELECT extract(epoch FROM now() - min(requested_at)) * 1000 FROM reconcile_request WHERE due_at IS NOT NULL)::float8
         AS "oldestPendingReadMs",
       ${upTo('deadReconciles')} AS "deadReconciles",
       ${upTo('deadNotifications')} AS "deadNotifications",
       ${upTo('pendingNotifications')} AS "pendingNotifications",
       (SELECT extract(epoch FROM now() - min(oldest.created_at)) * 1000
          FROM subscription s
         CROSS JOIN LATERAL (SELECT n.created_at FROM notification n WHERE n.state = 'pending' AND n.subscription_id = s.id
                              ORDER BY n.created_at LIMIT 1) oldest)::float8 AS "oldestPendingNotificationMs",
       (SELECT count(*) FROM subscription WHERE paused_at IS NOT NULL AND deleted_at IS NULL)::int AS "pausedSubscriptions"`;

type BacklogRow = Record<Subset, number> & Pick<BacklogFigures, 'oldestPendingReadMs' | 'oldestPendingNotificationMs' | 'pausedSubscriptions'>;

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
  table: string;
  all?: keyof TableFigures;
  rest?: keyof TableFigures;
  subset?: { name: keyof TableFigures; where: string; indexed: boolean };
}

const TABLE_SHAPES: readonly TableShape[] = [
  { table: 'post', rest: 'posts', subset: { name: 'deletedPosts', where: 'deleted_at IS NOT NULL', indexed: true } },
  { table: 'account', rest: 'accounts', subset: { name: 'removedAccounts', where: 'removed_at IS NOT NULL', indexed: true } },
  { table: 'pozy_event', all: 'storedEvents' },
  // graphile-worker deletes the jobs that succeed: normally few, but a stalled worker lets them pile up.
  { table: 'graphile_worker._private_jobs', all: 'jobs', subset: { name: 'failingJobs', where: 'last_error IS NOT NULL', indexed: false } },
];

// How many rows each table holds by PostgreSQL's bookkeeping: its analyzed density scaled to its size now, or,
// for a table never analyzed (reltuples -1: a first import a moment ago), the live rows its statistics counted.
const TABLE_SIZES = `
SELECT c.oid::regclass::text AS "table", c.reltuples::float8 AS reltuples, coalesce(s.n_live_tup, 0)::float8 AS "liveRows"
  FROM pg_class c LEFT JOIN pg_stat_all_tables s ON s.relid = c.oid
 WHERE c.oid = ANY ($1::regclass[])`;

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

interface Bucket {
  minute: Date;
  count: number;
  newest: Date | null;
  now: Date;
}

interface SliceMinute extends Bucket {
  slice: Date;
}

const MINUTES = `generate_series(date_trunc('minute', now() - interval '1 hour'), date_trunc('minute', now()), interval '1 minute')`;

// Sixty-one buckets: the first holds the end of the minute an hour ago, the other sixty are the chart's.
const HOUR_BY_MINUTE = `
WITH recent AS (
  SELECT received_at FROM pozy_event WHERE received_at > now() - interval '1 hour' LIMIT $1
), counted AS (
  SELECT date_trunc('minute', received_at) AS minute, count(*)::int AS count, max(received_at) AS newest
    FROM recent GROUP BY 1
)
SELECT m.minute, coalesce(c.count, 0)::int AS count, c.newest, now() AS now
  FROM ${MINUTES} AS m(minute)
  LEFT JOIN counted c USING (minute)
 ORDER BY m.minute`;

// A busy hour: each five-minute slice (on the clock's 5-minute marks) is read on its own, at most $1 events of it,
// counted by minute (minutes without events have no row). Slices, not minutes: a BRIN scan reads whole 128-page
// ranges, which a minute's events may not fill.
const EACH_SLICE = `
SELECT sl.slice, b.minute, b.count, b.newest, now() AS now
  FROM generate_series(date_bin('5 minutes', now() - interval '1 hour', timestamptz '2000-01-01 00:00Z'), now(),
                       interval '5 minutes') AS sl(slice)
 CROSS JOIN LATERAL (
   SELECT date_trunc('minute', received_at) AS minute, count(*)::int AS count, max(received_at) AS newest
     FROM (SELECT received_at FROM pozy_event
            WHERE received_at >= sl.slice AND received_at < sl.slice + interval '5 minutes'
              AND received_at > now() - interval '1 hour'
            LIMIT $1) sample
    GROUP BY 1) b
 ORDER BY b.minute`;

const NEWEST_PROBE = `
SELECT count(*)::int AS count, max(received_at) AS newest
  FROM (SELECT received_at FROM pozy_event WHERE received_at > $1::timestamptz LIMIT $2) s`;

const GAPS = `
SELECT date_trunc('hour', "timestamp") AS hour, count(*)::int AS events
  FROM pozy_event
 WHERE recovered_by IS NOT NULL AND "timestamp" > now() - interval '48 hours'
 GROUP BY 1 ORDER BY 1`;

const LAST_SYNCED = `
SELECT greatest((SELECT max(synced_at) FROM post), (SELECT max(synced_at) FROM account)) AS "lastSyncedAt"`;

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

/**
 * The figures of GET /sync/status, the status page and /metrics: the one place that defines and reads them. None
 * counts a large table: past EXACT_COUNT_LIMIT rows a count is PostgreSQL's estimate and says so, subsets are read
 * through partial indexes, maxima through indexes, and recent events through bounded BRIN range scans.
 */
@Injectable()
export class SyncFiguresRepository {
  constructor(private readonly database: DatabaseService) {}

  /** /metrics' figures. */
  backlog(): Promise<BacklogFigures> {
    return this.read((db) => this.backlogOf(db));
  }

  /** The status's figures, from one snapshot. */
  status(): Promise<StatusFigures> {
    return this.read(async (db) => ({
      backlog: await this.backlogOf(db),
      tables: await this.tablesOf(db),
      recent: await this.recentOf(db),
      lastSyncedAt: (await db.query<{ lastSyncedAt: Date | null }>(LAST_SYNCED)).rows[0].lastSyncedAt,
      gaps: (await db.query<{ hour: Date; events: number }>(GAPS)).rows,
    }));
  }

  /**
   * Runs `work` on one connection, in one read-only snapshot: the pool also serves webhooks, and the figures agree
   * with each other. Without JIT: the planner's cost of a bounded scan of a large table can pass jit_above_cost, and
   * compiling then takes hundreds of milliseconds, far longer than the scan.
   */
  private async read<T>(work: (db: PoolClient) => Promise<T>): Promise<T> {
    const client = await this.database.pool.connect();
    try {
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SET LOCAL jit = off');
      const result = await work(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  private async backlogOf(db: PoolClient): Promise<BacklogFigures> {
    const row = (await db.query<BacklogRow>(BACKLOG, [EXACT_COUNT_LIMIT + 1])).rows[0];
    const counts = await this.completeCounts(db, row);
    return {
      pendingReads: counts.pendingReads,
      oldestPendingReadMs: row.oldestPendingReadMs,
      deadLetters: { reconcile: counts.deadReconciles, notification: counts.deadNotifications },
      pendingNotifications: counts.pendingNotifications,
      oldestPendingNotificationMs: row.oldestPendingNotificationMs,
      pausedSubscriptions: row.pausedSubscriptions,
    };
  }

  /** Rows of the mirror, of stored events and of graphile-worker's jobs. */
  private async tablesOf(db: PoolClient): Promise<TableFigures> {
    const shapes = TABLE_SHAPES;
    const all = (shape: TableShape) => `SELECT 1 FROM ${shape.table}`;
    const part = (shape: TableShape) => `SELECT 1 FROM ${shape.table} WHERE ${shape.subset!.where}`;
    const [planned, sizes] = await Promise.all([
      plannerRows(db, shapes.flatMap((shape) => [all(shape), ...(shape.subset ? [part(shape)] : [])])),
      db.query<{ table: string; reltuples: number; liveRows: number }>(TABLE_SIZES, [shapes.map((shape) => shape.table)]),
    ]);
    const figures = {} as TableFigures;
    for (const shape of shapes) {
      const plannedRows = planned.shift()!;
      const plannedSubset = shape.subset ? planned.shift()! : 0;
      const size = sizes.rows.find((row) => row.table === shape.table || row.table.endsWith(`.${shape.table}`));
      const rows = size && size.reltuples < 0 && size.liveRows > 0 ? Math.round(size.liveRows) : plannedRows;
      if (rows < EXACT_COUNT_LIMIT) {
        const counted = await exactCounts(db, shape);
        for (const [name, value] of Object.entries(counted)) figures[name as keyof TableFigures] = exact(value);
        continue;
      }
      let subset: Figure = { value: 0, estimated: false };
      if (shape.subset) {
        const capped = shape.subset.indexed
          ? (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM (${part(shape)} LIMIT $1) s`, [EXACT_COUNT_LIMIT + 1])).rows[0].n
          : EXACT_COUNT_LIMIT + 1;
        // Past the cap, PostgreSQL's estimate of the subset, scaled like the table's, and never below the cap.
        subset = capped <= EXACT_COUNT_LIMIT ? exact(capped) : { value: Math.max(capped, Math.round((plannedSubset * rows) / Math.max(1, plannedRows))), estimated: true };
        figures[shape.subset.name] = subset;
      }
      if (shape.all) figures[shape.all] = { value: rows, estimated: true };
      if (shape.rest) figures[shape.rest] = { value: Math.max(0, rows - subset.value), estimated: true };
    }
    return figures;
  }

  private async recentOf(db: PoolClient): Promise<RecentEvents> {
    const { rows: hour } = await db.query<Bucket>(HOUR_BY_MINUTE, [HOUR_SCAN_LIMIT + 1]);
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
    const { rows: sampled } = await db.query<SliceMinute>(EACH_SLICE, [SLICE_SCAN_LIMIT + 1]);
    const { buckets, estimated } = bySlice(hour, sampled);
    // The newest event read is the newest of all when its slice was read whole; the later slices held none.
    const last = sampled.at(-1);
    const lastSliceRead = sampled.filter((m) => m.slice.getTime() === last?.slice.getTime()).reduce((sum, m) => sum + m.count, 0);
    const emptyAfter = last ? new Date(Math.min(now.getTime(), last.slice.getTime() + SLICE_MS)) : now;
    return {
      lastHour: { value: buckets.reduce((sum, b) => sum + b.count, 0), estimated },
      perMinute: { value: chart(buckets), estimated },
      lastReceivedAt:
        last?.newest && lastSliceRead <= SLICE_SCAN_LIMIT ? exact(last.newest) : await this.newestReceivedAt(db, now, emptyAfter),
    };
  }

  /** Counts that reached the limit become the planner's estimate, which is never taken below the count. */
  private async completeCounts(db: PoolClient, row: Record<Subset, number>): Promise<Record<Subset, Figure>> {
    const over = (Object.keys(SUBSETS) as Subset[]).filter((subset) => row[subset] > EXACT_COUNT_LIMIT);
    const estimates = await plannerRows(db, over.map((subset) => SUBSETS[subset]));
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
  private async newestReceivedAt(db: PoolClient, now: Date, emptyAfter: Date): Promise<Estimate<Date | null>> {
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

async function probeNewest(db: PoolClient, after: Date | null): Promise<{ count: number; newest: Date | null }> {
  const { rows } = await db.query<{ count: number; newest: Date | null }>(NEWEST_PROBE, [after ?? '-infinity', NEWEST_PROBE_LIMIT + 1]);
  return rows[0];
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
    const reached = Math.max(...minutes.map((m) => m.newest!.getTime()));
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

/** A small table's figures, counted in one pass. */
async function exactCounts(db: PoolClient, shape: TableShape): Promise<Record<string, number>> {
  const subset = shape.subset ? `, count(*) FILTER (WHERE ${shape.subset.where})::int AS subset` : '';
  const { rows } = await db.query<{ rows: number; subset?: number }>(`SELECT count(*)::int AS rows${subset} FROM ${shape.table}`);
  const { rows: total, subset: part = 0 } = rows[0];
  return {
    ...(shape.all ? { [shape.all]: total } : {}),
    ...(shape.rest ? { [shape.rest]: total - part } : {}),
    ...(shape.subset ? { [shape.subset.name]: part } : {}),
  };
}
