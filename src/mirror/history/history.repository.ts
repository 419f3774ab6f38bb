import { Injectable } from '@nestjs/common';
import { RawBuilder, sql } from 'kysely';
import { DatabaseService, Db } from '../../database/database.service';
import { ALL_WORKSPACES, Workspaces } from '../../common/read-scope';
import type { JsonText } from '../whole-object';
import { GenerateSql, Sample } from '../../database/sql-snapshot';

/** What the history keeps versions of: pozy-sync's `post` and `account` tables. */
export type HistoryResource = 'post' | 'account';

/** A version as its row holds it. */
export interface VersionRow {
  workspace_id: string;
  sequence: number;
  read_at: Date;
  read_id: string | null;
  event_ids: string[] | null;
  /** The resource as GET /posts/:id or GET /accounts/:id answered it after the change (jsonb's key order). */
  data: Record<string, unknown>;
}

/** The version current at an instant, as the JSON text to answer. */
export interface AsOfRow {
  workspace_id: string;
  body: JsonText;
}

const VERSION_COLUMNS = ['v.workspace_id', 'v.sequence', 'v.read_at', 'v.read_id', 'v.event_ids', 'v.data'] as const;

/**
 * resource_version: a post's or account's versions, one row per change of its mirrored state. Appended by the mirror
 * writes through record-versions.ts (in their statement); read by primary key or the (…, read_at, sequence) index,
 * never by a scan; pruned by age, never a resource's newest version.
 */
@Injectable()
export class HistoryRepository {
  constructor(private readonly database: DatabaseService) {}

  /**
   * The workspaces of `workspaces` that hold a resource of this id, as GET /posts/:id and GET /accounts/:id find it
   * (a post the mirror only ever saw deleted, a tombstone, has no version and is not found).
   */
  @GenerateSql({ params: [Sample.DB, 'post', Sample.STRING, [Sample.WORKSPACE]] })
  async holders(db: Db, type: HistoryResource, id: string, workspaces: Workspaces): Promise<string[]> {
    const inScope = workspaces === ALL_WORKSPACES ? undefined : [...workspaces];
    const rows =
      type === 'post'
        ? await db
            .selectFrom('post')
            .select('workspace_id')
            .where('id', '=', id)
            .where('pozy_updated_at', 'is not', null)
            .$if(inScope !== undefined, (qb) => qb.where('workspace_id', '=', (eb) => eb.fn.any(eb.val(inScope!))))
            .orderBy('workspace_id')
            .execute()
        : await db
            .selectFrom('account')
            .select('workspace_id')
            .where('id', '=', id)
            .$if(inScope !== undefined, (qb) => qb.where('workspace_id', '=', (eb) => eb.fn.any(eb.val(inScope!))))
            .orderBy('workspace_id')
            .execute();
    return rows.map((row) => row.workspace_id);
  }

  /** Up to `take` versions of the resource, newest first, those before sequence `before` when given: by primary key. */
  @GenerateSql({ params: [Sample.DB, 'post', Sample.WORKSPACE, Sample.STRING, null, Sample.NUMBER] })
  async versions(db: Db, type: HistoryResource, workspaceId: string, id: string, before: number | null, take: number): Promise<VersionRow[]> {
    const rows = await db
      .selectFrom('resource_version as v')
      .select(VERSION_COLUMNS)
      .where('v.workspace_id', '=', workspaceId)
      .where('v.resource_type', '=', type)
      .where('v.resource_id', '=', id)
      .$if(before !== null, (qb) => qb.where('v.sequence', '<', before!))
      .orderBy('v.sequence', 'desc')
      .limit(take)
      .execute();
    return rows as VersionRow[];
  }

  /**
   * Per workspace of `workspaces` holding the resource, the version current at `at`: the newest read at or before it
   * (the sequence breaks a tie), as `body` writes it from `v.data`. One probe of the (workspace, type, id, read_at,
   * sequence) index per workspace.
   */
  @GenerateSql({
    params: [Sample.DB, 'post', Sample.STRING, Sample.DATE, sql`'{}'`, [Sample.WORKSPACE]],
    answers: [[{ workspace_id: Sample.WORKSPACE }]],
  })
  async asOf(db: Db, type: HistoryResource, id: string, at: Date, body: RawBuilder<JsonText>, workspaces: Workspaces): Promise<AsOfRow[]> {
    const holders = await this.holders(db, type, id, workspaces);
    const rows: AsOfRow[] = [];
    for (const workspaceId of holders) {
      const row = await db
        .selectFrom('resource_version as v')
        .select(['v.workspace_id', body.as('body')])
        .where('v.workspace_id', '=', workspaceId)
        .where('v.resource_type', '=', type)
        .where('v.resource_id', '=', id)
        .where('v.read_at', '<=', at)
        .orderBy('v.read_at', 'desc')
        .orderBy('v.sequence', 'desc')
        .limit(1)
        .executeTakeFirst();
      if (row) rows.push(row);
    }
    return rows;
  }

  /** Where this run's walk of the old versions has got to: it never scans again what it kept (see pruneBefore). */
  private walk: { cutoff: number; from: Date | null } | undefined;

  /**
   * Retention: deletes up to `limit` versions superseded by a newer version of their resource read before `cutoff`
   * (the versions no instant after the cutoff answers), and answers how many. A resource's newest version is never
   * deleted, however old: asOf now still answers what GET /posts/:id does, and asOf any instant after the cutoff
   * answers exactly. The old versions are walked in read_at order, `limit` a statement, from where the previous call
   * of the same run (the same cutoff) stopped, so each run reads each old version it keeps once, not once a batch.
   * SKIP LOCKED leaves a version being written right now to the next run.
   */
  @GenerateSql({ params: [Sample.DATE, Sample.NUMBER] })
  async pruneBefore(cutoff: Date, limit: number): Promise<number> {
    const db = this.database.db;
    if (this.walk?.cutoff !== cutoff.getTime()) this.walk = { cutoff: cutoff.getTime(), from: null };
    const walk = this.walk;
    let deleted = 0;
    while (deleted < limit) {
      const rows = await db.transaction().execute(async (trx) => {
        const scanned = await trx
          .selectFrom('resource_version as o')
          .select((eb) => [
            'o.workspace_id',
            'o.resource_type',
            'o.resource_id',
            'o.sequence',
            'o.read_at',
            eb
              .exists(
                eb
                  .selectFrom('resource_version as n')
                  .select(eb.lit(1).as('one'))
                  .whereRef('n.workspace_id', '=', 'o.workspace_id')
                  .whereRef('n.resource_type', '=', 'o.resource_type')
                  .whereRef('n.resource_id', '=', 'o.resource_id')
                  .whereRef('n.sequence', '>', 'o.sequence')
                  .where('n.read_at', '<', cutoff),
              )
              .as('superseded'),
          ])
          .where('o.read_at', '<', cutoff)
          .$if(walk.from !== null, (qb) => qb.where('o.read_at', '>=', walk.from!))
          .orderBy('o.read_at')
          .limit(limit)
          .forUpdate()
          .skipLocked()
          .execute();
        const gone = scanned.filter((row) => row.superseded);
        if (gone.length > 0) {
          const keys = sql.join(gone.map((row) => sql`(${row.workspace_id}, ${row.resource_type}, ${row.resource_id}, ${row.sequence}::integer)`));
          await trx
            .deleteFrom('resource_version')
            .where(sql<boolean>`(workspace_id, resource_type, resource_id, sequence) IN (${keys})`)
            .execute();
        }
        return { scanned, deleted: gone.length };
      });
      deleted += rows.deleted;
      // The walk goes on from the last version read (a tie on read_at is read again, and what it deleted is gone).
      if (rows.scanned.length < limit) {
        walk.from = new Date(cutoff.getTime());
        break;
      }
      const last = rows.scanned[rows.scanned.length - 1].read_at;
      if (last.getTime() === walk.from?.getTime() && rows.deleted === 0) {
        // A whole statement of versions read at one instant, all kept: step past that instant.
        walk.from = new Date(last.getTime() + 1);
      } else walk.from = last;
    }
    return deleted;
  }
}
