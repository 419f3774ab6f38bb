import { Injectable } from '@nestjs/common';
import { Selectable, sql } from 'kysely';
import { advisoryXactLock, LockKey } from '../database/advisory-lock';
import { DatabaseService, Db } from '../database/database.service';
import type { DB } from '../generated/kysely/database';
import { ChangeType } from './record-changes';
import { partitionOf, resourceOfType } from './partition';
import { GenerateSql, Sample } from '../database/sql-snapshot';

/**
 * The PostgreSQL channel a sequencer pass announces new positions on, to every replica's long-polling readers; the
 * payload is the newest position placed (empty from versions before it carried one).
 */
export const SEQUENCED_CHANNEL = 'pozy_sync_changes';

export interface ChangeFilter {
  /** Only these workspaces' entries (the reader's scope, cut to what it asked for); absent: every workspace. */
  workspaces?: readonly string[];
  types?: readonly ChangeType[];
  profileId?: string;
  platform?: string;
  /** Entries naming any of these profiles (a named consumer's `profileIds`). */
  profileIds?: readonly string[];
  /** Entries naming any of these platforms (a named consumer's `platforms`). */
  platforms?: readonly string[];
  /** Only the resources of this partition of a named consumer (partition.ts): applied in memory, never in SQL. */
  partition?: { index: number; of: number };
}

/** A placed entry, with what the filters match (so a page read unfiltered can be filtered in memory: change-window.ts). */
export type ChangeRow = Pick<
  Selectable<DB['change']>,
  'workspace_id' | 'type' | 'resource_id' | 'sequence' | 'changed_at' | 'data' | 'profile_ids' | 'platforms'
> & {
  position: string;
};

/** A page read of the feed, and the feed's bounds in the same snapshot. */
export interface ChangePageRead {
  rows: ChangeRow[];
  /** The oldest position kept; null when the feed has never had a change. */
  oldest: string | null;
  /** The newest position handed out; null when the feed has never had a change. */
  newest: string | null;
}

/** The change feed's table: entries are appended by the mirror writes (mirror/change-notifications.ts) and owned here otherwise. */
@Injectable()
export class ChangeRepository {
  constructor(private readonly database: DatabaseService) {}

  /**
   * Places up to `limit` committed, unplaced entries at the feed's next positions, in insertion order, and tells
   * every replica's readers when it placed any. Serialised by an advisory lock held to the end of the transaction:
   * the next pass starts from the positions this one committed, so a position once readable never gets an entry
   * before it, and an entry that commits late only ever lands after every position already handed out.
   * Answers how many it placed, the newest position (null: none), which its NOTIFY carries as the payload, and how
   * long each entry had waited since its write.
   */
  @GenerateSql({ params: [Sample.NUMBER] })
  place(limit: number): Promise<{ placed: number; newest: string | null; waitedSeconds: number[] }> {
    return this.database.db.transaction().execute(async (trx) => {
      await advisoryXactLock(trx, LockKey.ChangeSequencer);
      // The unplaced entries are found in id order through change_unsequenced_idx, never by a bitmap scan: after a
      // large write (an import), the index entries of rows placed since (dead until vacuumed) outnumber the live ones
      // many times, and only a plain index scan marks them dead as it passes, so that the next pass skips them. A
      // bitmap scan read every one of them, in every pass.
      await sql`SET LOCAL enable_bitmapscan = off`.execute(trx);
      // A new statement: its snapshot sees every pass that committed before the lock was granted.
      const placed = await trx
        .with('next', (qc) =>
          qc
            .selectFrom((eb) =>
              eb.selectFrom('change').select(['workspace_id', 'id']).where('position', 'is', null).orderBy('id').limit(limit).as('unplaced'),
            )
            .select((eb) => [
              'unplaced.workspace_id',
              'unplaced.id',
              eb.fn
                .agg<string>('row_number')
                .over((ob) => ob.orderBy('unplaced.id'))
                .as('n'),
            ]),
        )
        .with('top', (qc) => qc.selectFrom('change').select((eb) => eb.fn.coalesce(eb.fn.max('position'), sql<string>`0`).as('position')))
        .updateTable('change')
        .from(['next', 'top'])
        .set((eb) => ({ position: eb(eb.ref('top.position'), '+', eb.ref('next.n')) }))
        // By the primary key: an entry's id is unique across workspaces, yet only with its workspace indexed.
        .whereRef('change.workspace_id', '=', 'next.workspace_id')
        .whereRef('change.id', '=', 'next.id')
        // How long each entry waited since its write (its transaction's start) for a position: a feed-latency histogram.
        .returning((eb) => [
          'change.position',
          sql<number>`extract(epoch FROM clock_timestamp() - ${eb.ref('change.changed_at')})::float8`.as('waited'),
        ])
        .execute();
      const newest = placed.reduce<string | null>((top, row) => (top === null || BigInt(row.position!) > BigInt(top) ? row.position : top), null);
      if (newest !== null) await trx.selectNoFrom((eb) => eb.fn('pg_notify', [eb.val(SEQUENCED_CHANNEL), eb.val(newest)]).as('notified')).execute();
      return { placed: placed.length, newest, waitedSeconds: placed.map((row) => row.waited) };
    });
  }

  /**
   * Up to `limit` entries after `after` (and no further than `after + scan`, so that a filter matching little still
   * answers quickly) matching `filter`, in position order, with the feed's bounds, all in one snapshot.
   */
  @GenerateSql({ params: [Sample.DB, Sample.STRING, Sample.NUMBER, 100, { workspaces: [Sample.WORKSPACE], types: ['post.updated'] }] })
  async page(db: Db, after: string, limit: number, scan: number, filter: ChangeFilter): Promise<ChangePageRead> {
    // A partition is a hash PostgreSQL does not compute: the statement reads every entry of the window that the other
    // filters match (`scan` at most, which a partitioned read keeps small), and the partition is picked from them here.
    const { partition } = filter;
    const read = await this.window(db, after, partition ? scan : limit, scan, filter);
    if (!partition) return read;
    const rows = read.rows.filter((row) => partitionOf(resourceOfType(row.type), row.resource_id, partition.of) === partition.index);
    return { ...read, rows: rows.slice(0, limit) };
  }

  @GenerateSql({ none: 'a helper: its statements show under the methods that call it' })
  private async window(db: Db, after: string, limit: number, scan: number, filter: ChangeFilter): Promise<ChangePageRead> {
    const rows = await db
      .with('bounds', (qc) =>
        qc.selectNoFrom((eb) => [
          eb
            .selectFrom('change')
            .select((eb) => eb.fn.min('position').as('p'))
            .$asScalar()
            .as('oldest'),
          eb
            .selectFrom('change')
            .select((eb) => eb.fn.max('position').as('p'))
            .$asScalar()
            .as('newest'),
        ]),
      )
      .with('entries', (qc) =>
        qc
          .selectFrom('change')
          .select(['position', 'workspace_id', 'type', 'resource_id', 'sequence', 'changed_at', 'data', 'profile_ids', 'platforms'])
          .where((eb) =>
            eb.and([
              eb('position', '>', sql<string>`${after}::bigint`),
              eb('position', '<=', sql<string>`${after}::bigint + ${scan}`),
              ...(filter.workspaces ? [eb('workspace_id', '=', eb.fn.any(eb.val([...filter.workspaces])))] : []),
              ...(filter.types ? [eb('type', '=', eb.fn.any(eb.val([...filter.types])))] : []),
              ...(filter.profileId !== undefined ? [eb(eb.val(filter.profileId), '=', eb.fn.any('profile_ids'))] : []),
              ...(filter.platform !== undefined ? [eb(eb.val(filter.platform), '=', eb.fn.any('platforms'))] : []),
              ...(filter.profileIds ? [eb('profile_ids', '&&', eb.val([...filter.profileIds]))] : []),
              ...(filter.platforms ? [eb('platforms', '&&', eb.val([...filter.platforms]))] : []),
            ]),
          )
          .orderBy('position')
          .limit(limit),
      )
      .selectFrom('bounds')
      .leftJoin('entries', (join) => join.onTrue())
      .select([
        'bounds.oldest',
        'bounds.newest',
        'entries.position',
        'entries.workspace_id',
        'entries.type',
        'entries.resource_id',
        'entries.sequence',
        'entries.changed_at',
        'entries.data',
        'entries.profile_ids',
        'entries.platforms',
      ])
      .orderBy('entries.position')
      .execute();
    const { oldest, newest } = rows[0];
    return {
      oldest,
      newest,
      rows: rows.flatMap((r) =>
        r.position === null ||
        r.workspace_id === null ||
        r.type === null ||
        r.resource_id === null ||
        r.sequence === null ||
        r.changed_at === null ||
        r.profile_ids === null ||
        r.platforms === null
          ? []
          : [
              {
                position: r.position,
                workspace_id: r.workspace_id,
                type: r.type,
                resource_id: r.resource_id,
                sequence: r.sequence,
                changed_at: r.changed_at,
                data: r.data,
                profile_ids: r.profile_ids,
                platforms: r.platforms,
              },
            ],
      ),
    };
  }

  /** The oldest position kept and the newest handed out (null for a feed that has never had a change). */
  @GenerateSql({ params: [Sample.DB] })
  async bounds(db: Db): Promise<{ oldest: string | null; newest: string | null }> {
    const row = await db
      .selectFrom('change')
      .select((eb) => [eb.fn.min('position').as('oldest'), eb.fn.max('position').as('newest')])
      .executeTakeFirstOrThrow();
    return { oldest: row.oldest, newest: row.newest };
  }

  /** When each of these positions' entries changed the mirror; a position not kept (or not placed yet) is absent. */
  @GenerateSql({ params: [[Sample.UUID]] })
  async changedAt(positions: readonly string[]): Promise<Map<string, Date>> {
    if (positions.length === 0) return new Map();
    const rows = await this.database.db
      .selectFrom('change')
      .select(['position', 'changed_at'])
      .where('position', '=', (eb) => eb.fn.any(eb.val([...new Set(positions)])))
      .execute();
    return new Map(rows.map((row) => [row.position!, row.changed_at]));
  }

  /**
   * Deletes up to `limit` of the oldest placed entries, in position order and stopping at the first one changed at or
   * after `cutoff`; the newest entry is always kept. What remains is therefore always one unbroken run of positions
   * up to the newest, so a cursor is expired exactly when it is older than the oldest position kept, minus one.
   * `keepAfter`: an active named consumer's lowest committed position; every entry after it is kept, whatever its age.
   */
  @GenerateSql({ params: [Sample.DATE, Sample.NUMBER] })
  async pruneBefore(cutoff: Date, limit: number, keepAfter: string | null = null): Promise<number> {
    const result = await this.database.db
      .with('head', (qc) =>
        qc
          .selectFrom('change')
          .select(['workspace_id', 'id', 'position', 'changed_at'])
          .where('position', 'is not', null)
          .orderBy('position')
          .limit(limit),
      )
      .with('stop', (qc) =>
        qc.selectNoFrom((eb) =>
          eb
            .fn<string | null>('least', [
              eb
                .selectFrom('head')
                .select((eb) => eb.fn.min('position').as('p'))
                .where('changed_at', '>=', cutoff)
                .$asScalar(),
              eb
                .selectFrom('change')
                .select((eb) => eb.fn.max('position').as('p'))
                .$asScalar(),
              // least() ignores a null: no consumer holds anything then.
              keepAfter === null ? sql<string | null>`NULL` : sql<string>`${keepAfter}::bigint + 1`,
            ])
            .as('position'),
        ),
      )
      .deleteFrom('change')
      .using(['head', 'stop'])
      .whereRef('change.workspace_id', '=', 'head.workspace_id')
      .whereRef('change.id', '=', 'head.id')
      .whereRef('head.position', '<', 'stop.position')
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
