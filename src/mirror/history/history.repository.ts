import { Injectable } from '@nestjs/common';
import { RawBuilder, sql } from 'kysely';
import { DatabaseService, Db } from '../../database/database.service';
import { ALL_WORKSPACES, Workspaces } from '../../common/read-scope';
import type { JsonText } from '../whole-object';

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

  /**
   * Retention: deletes up to `limit` versions read before `cutoff` that a newer version of their resource supersedes
   * (found through the BRIN index on read_at, each checked by primary key); answers how many. A resource's newest
   * version is never deleted, however old: asOf now still answers what GET /posts/:id does. SKIP LOCKED leaves a
   * version being written right now to the next run.
   */
  async pruneBefore(cutoff: Date, limit: number): Promise<number> {
    const db = this.database.db;
    const old = db
      .selectFrom('resource_version as o')
      .select(['o.workspace_id', 'o.resource_type', 'o.resource_id', 'o.sequence'])
      .where((eb) =>
        eb.and([
          eb('o.read_at', '<', cutoff),
          eb.exists(
            eb
              .selectFrom('resource_version as n')
              .select(eb.lit(1).as('one'))
              .whereRef('n.workspace_id', '=', 'o.workspace_id')
              .whereRef('n.resource_type', '=', 'o.resource_type')
              .whereRef('n.resource_id', '=', 'o.resource_id')
              .whereRef('n.sequence', '>', 'o.sequence'),
          ),
        ]),
      )
      .limit(limit)
      .forUpdate()
      .skipLocked();
    const result = await db
      .deleteFrom('resource_version')
      .using(old.as('old'))
      .where(
        sql<boolean>`(${sql.join(['workspace_id', 'resource_type', 'resource_id', 'sequence'].map((c) => sql.ref(`resource_version.${c}`)))})
          = (${sql.join(['workspace_id', 'resource_type', 'resource_id', 'sequence'].map((c) => sql.ref(`old.${c}`)))})`,
      )
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
