import { Injectable } from '@nestjs/common';
import { Selectable, sql } from 'kysely';
import { ALL_WORKSPACES, Workspaces } from '../common/read-scope';
import { DatabaseService } from '../database/database.service';
import type { DB } from '../generated/kysely/database';
import { GenerateSql, Sample } from '../database/sql-snapshot';

type ReadTokenRow = Selectable<DB['read_token']>;

/** A token as the admin endpoints answer it: never the token, nor its hash. */
export interface ReadTokenSummary {
  id: string;
  name: string;
  workspaces: Workspaces;
  /** Present only for a token limited to named consumers. */
  consumers?: string[];
  createdAt: Date;
  lastUsedAt: Date | null;
}

/** A live token as the registry keeps it. */
export interface LiveReadToken {
  id: string;
  tokenHash: string;
  workspaces: Workspaces;
  /** Present only for a token limited to named consumers. */
  consumers?: string[];
  lastUsedAt: Date | null;
}

/** Where a page of the list ends: the list runs newest first, by (createdAt, id). */
export interface ReadTokenPosition {
  createdAt: Date;
  id: string;
}

/**
 * The table's counts: every row there ever was, and the deleted ones. A token is only ever inserted or deleted
 * (deleted_at set once; last_used_at aside), so every change raises one of the two and a replica that reads the
 * same pair twice knows nothing changed between. A max(updated_at) could not tell: a write can commit after a later
 * one, under an older time.
 */
export interface ReadTokenFingerprint {
  total: number;
  deleted: number;
}

const workspacesOf = (row: Pick<ReadTokenRow, 'all_workspaces' | 'workspaces'>): Workspaces => (row.all_workspaces ? ALL_WORKSPACES : row.workspaces);

/** A token limited to named consumers has them; any other none (the key is left out of its answers). */
const consumersOf = (row: Pick<ReadTokenRow, 'consumers'>): { consumers?: string[] } =>
  row.consumers !== null && row.consumers.length > 0 ? { consumers: row.consumers } : {};

const summary = (row: ReadTokenRow): ReadTokenSummary => ({
  id: row.id,
  name: row.name,
  workspaces: workspacesOf(row),
  ...consumersOf(row),
  createdAt: row.created_at,
  lastUsedAt: row.last_used_at,
});

/** The read_token table's one owner. */
@Injectable()
export class ReadTokenRepository {
  constructor(private readonly database: DatabaseService) {}

  @GenerateSql({ params: [{ id: Sample.UUID, name: Sample.STRING, tokenHash: Sample.STRING, workspaces: [Sample.WORKSPACE] }] })
  async create(token: {
    id: string;
    name: string;
    tokenHash: string;
    workspaces: Workspaces;
    consumers?: readonly string[];
  }): Promise<ReadTokenSummary> {
    const all = token.workspaces === ALL_WORKSPACES;
    const row = await this.database.db
      .insertInto('read_token')
      .values({
        id: token.id,
        name: token.name,
        token_hash: token.tokenHash,
        all_workspaces: all,
        workspaces: all ? [] : [...token.workspaces],
        consumers: [...(token.consumers ?? [])],
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    return summary(row);
  }

  /** Live tokens, newest first, after `after` (the last of the previous page); `limit` at most. */
  @GenerateSql({ params: [Sample.NUMBER, null] })
  async list(limit: number, after: ReadTokenPosition | null): Promise<ReadTokenSummary[]> {
    let query = this.database.db
      .selectFrom('read_token')
      .selectAll()
      .where('deleted_at', 'is', null)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(limit);
    if (after) {
      query = query.where((eb) =>
        eb.or([eb('created_at', '<', after.createdAt), eb.and([eb('created_at', '=', after.createdAt), eb('id', '<', after.id)])]),
      );
    }
    return (await query.execute()).map(summary);
  }

  /** Marks a live token deleted; false when none has this id (or it was deleted already). */
  @GenerateSql({ params: [Sample.UUID] })
  async delete(id: string): Promise<boolean> {
    const { numUpdatedRows } = await this.database.db
      .updateTable('read_token')
      .set({ deleted_at: new Date() })
      .where('id', '=', id)
      .where('deleted_at', 'is', null)
      .executeTakeFirst();
    return numUpdatedRows === 1n;
  }

  /** One small aggregate, read by every replica every second (the table holds a row per token ever made). */
  @GenerateSql({ params: [] })
  async fingerprint(): Promise<ReadTokenFingerprint> {
    const row = await this.database.db
      .selectFrom('read_token')
      .select((eb) => [eb.cast<number>(eb.fn.countAll(), 'integer').as('total'), eb.cast<number>(eb.fn.count('deleted_at'), 'integer').as('deleted')])
      .executeTakeFirstOrThrow();
    return { total: row.total, deleted: row.deleted };
  }

  @GenerateSql({ params: [] })
  async live(): Promise<LiveReadToken[]> {
    const rows = await this.database.db
      .selectFrom('read_token')
      .select(['id', 'token_hash', 'all_workspaces', 'workspaces', 'consumers', 'last_used_at'])
      .where('deleted_at', 'is', null)
      .execute();
    return rows.map((row) => ({
      id: row.id,
      tokenHash: row.token_hash,
      workspaces: workspacesOf(row),
      ...consumersOf(row),
      lastUsedAt: row.last_used_at,
    }));
  }

  /**
   * Records that these tokens were used: a row is written only when its last use is a minute old or more, so the
   * replicas together write a token at most once a minute however many of them saw it.
   */
  @GenerateSql({ params: [[Sample.UUID]] })
  async touch(ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.database.db
      .updateTable('read_token')
      .set({ last_used_at: sql<Date>`now()` })
      .where('id', 'in', [...ids])
      .where('deleted_at', 'is', null)
      .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<=', sql<Date>`now() - interval '1 minute'`)]))
      .execute();
  }
}
