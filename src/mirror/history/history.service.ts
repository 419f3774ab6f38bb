import { Injectable } from '@nestjs/common';
import { sql } from 'kysely';
import { ApiError } from '../../common/api-error';
import { isWorkspaceId, readsNothing, Workspaces } from '../../common/read-scope';
import type { Db } from '../../database/database.service';
import { atMostOne } from '../ambiguous-id';
import { ACCOUNT_FIELD_ORDER } from '../accounts/account-fields';
import { POST_FIELD_ORDER } from '../posts/post-fields';
import { FieldOrder, JsonText } from '../whole-object';
import { HistoryResource, HistoryRepository, VersionRow } from './history.repository';
import { versionText } from './version-text';

const DEFAULT_LIMIT = 50;

const ORDERS: Record<HistoryResource, FieldOrder> = { post: POST_FIELD_ORDER, account: ACCOUNT_FIELD_ORDER };
/** The fields GET /posts/:id writes from a text[] (see versionText). */
const COMPACT: Record<HistoryResource, readonly string[]> = { post: ['profileIds'], account: [] };
const WHAT = { post: 'Post', account: 'Account' } as const;
/** Which mirror field says the version is a deletion, and the types the feed gives the two kinds of change. */
const GONE = { post: ['deletedAt', 'post.deleted', 'post.changed'], account: ['removedAt', 'account.removed', 'account.changed'] } as const;

export interface Version {
  workspaceId: string;
  id: string;
  sequence: number;
  type: string;
  readAt: string;
  readId: string | null;
  eventIds: string[];
  post?: Record<string, unknown>;
  account?: Record<string, unknown>;
}

/** A post's or account's versions, and the one current at an instant: the mirror's own history, never Pozy. */
@Injectable()
export class HistoryService {
  constructor(private readonly repository: HistoryRepository) {}

  /** A page of the resource's versions, newest first; 404 when the reader's workspaces hold no such resource. */
  async page(
    type: HistoryResource,
    id: string,
    query: { limit?: number; cursor?: string },
    db: Db,
    workspaces: Workspaces,
  ): Promise<{ data: Version[]; nextCursor: string | null }> {
    const limit = query.limit ?? DEFAULT_LIMIT;
    const cursor = decodeVersionCursor(query.cursor);
    const [holder] = readsNothing(workspaces) ? [] : atMostOne(WHAT[type], id, await this.holders(db, type, id, workspaces));
    const workspaceId = holder?.workspace_id;
    if (workspaceId === undefined) throw notFound(type, id);
    if (cursor && cursor.workspace !== workspaceId) throw invalidCursor();
    const rows = await this.repository.versions(db, type, workspaceId, id, cursor?.before ?? null, limit + 1);
    const data = rows.slice(0, limit);
    const last = data.at(-1);
    return {
      data: data.map((row) => version(type, id, row)),
      nextCursor: rows.length > limit && last ? encodeVersionCursor({ workspace: workspaceId, before: last.sequence }) : null,
    };
  }

  /**
   * The resource as GET /posts/:id (or /accounts/:id) answered it at `at`, as JSON text in the documented field order
   * (with `fields`, only those); undefined when the mirror held no version of it then.
   */
  async asOf(
    type: HistoryResource,
    id: string,
    at: Date,
    fields: readonly string[] | undefined,
    db: Db,
    workspaces: Workspaces,
  ): Promise<JsonText | undefined> {
    if (readsNothing(workspaces)) return undefined;
    const body = versionText(sql.ref('v.data'), ORDERS[type], COMPACT[type], fields);
    const [row] = atMostOne(WHAT[type], id, await this.repository.asOf(db, type, id, at, body, workspaces));
    return row?.body;
  }

  private holders(db: Db, type: HistoryResource, id: string, workspaces: Workspaces): Promise<Array<{ workspace_id: string }>> {
    return this.repository.holders(db, type, id, workspaces).then((ids) => ids.map((workspace_id) => ({ workspace_id })));
  }
}

function version(type: HistoryResource, id: string, row: VersionRow): Version {
  const [goneField, goneType, changedType] = GONE[type];
  return {
    workspaceId: row.workspace_id,
    id,
    sequence: row.sequence,
    type: row.data[goneField] === null || row.data[goneField] === undefined ? changedType : goneType,
    readAt: row.read_at.toISOString(),
    readId: row.read_id,
    eventIds: row.event_ids ?? [],
    [type]: inFieldOrder(row.data, ORDERS[type]),
  };
}

/**
 * The resource's fields in the order GET /posts/:id writes them (jsonb keeps its own): Pozy's known fields, those
 * pozy-sync does not know, the mirror's last; with `fields`, only those.
 */
export function inFieldOrder(data: Record<string, unknown>, order: FieldOrder, fields?: readonly string[]): Record<string, unknown> {
  const known = new Set([...order.pozy, ...order.mirror]);
  const wanted = (name: string) => (fields === undefined || fields.includes(name)) && Object.prototype.hasOwnProperty.call(data, name);
  const names = [
    ...order.pozy.filter(wanted),
    ...(fields === undefined ? Object.keys(data).filter((name) => !known.has(name)) : []),
    ...order.mirror.filter(wanted),
  ];
  return Object.fromEntries(names.map((name) => [name, data[name]]));
}

const notFound = (type: HistoryResource, id: string) => new ApiError('not_found', `${WHAT[type]} ${id} is not in the mirror`);
const invalidCursor = () => new ApiError('invalid_query', 'cursor is not one this service returned (use nextCursor as given)');

/** A history page's cursor: the workspace read and the last sequence answered. */
interface VersionCursor {
  workspace: string;
  before: number;
}

function encodeVersionCursor(cursor: VersionCursor): string {
  return Buffer.from(JSON.stringify(cursor)).toString('base64url');
}

function decodeVersionCursor(cursor: string | undefined): VersionCursor | null {
  if (cursor === undefined) return null;
  try {
    const { workspace, before } = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as Partial<Record<keyof VersionCursor, unknown>>;
    if (isWorkspaceId(workspace) && Number.isSafeInteger(before) && (before as number) >= 0 && (before as number) <= 2 ** 31) {
      return { workspace, before: before as number };
    }
  } catch {
    // fall through
  }
  throw invalidCursor();
}
