import { ApiError } from '../../common/api-error';
import { isWorkspaceId } from '../../common/read-scope';
import { isStorableText } from '../../common/storable-text';

/** The orders of GET /posts, each `:asc` or `:desc`. */
export const POST_SORTS = [
  'id:asc',
  'id:desc',
  'scheduledFor:asc',
  'scheduledFor:desc',
  'publishedAt:asc',
  'publishedAt:desc',
  'pozyUpdatedAt:asc',
  'pozyUpdatedAt:desc',
];

/** The column of each field a post list can be ordered by (each indexed with id: see schema.prisma). */
export const SORT_COLUMNS = {
  scheduledFor: 'scheduled_for',
  publishedAt: 'published_at',
  pozyUpdatedAt: 'pozy_updated_at',
} as const;

export type PostSort = { field: 'id'; desc: boolean } | { field: keyof typeof SORT_COLUMNS; desc: boolean };

/** `sort` as validated by ListPostsQuery: `field` or `field:direction`. */
export function parseSort(sort: string | undefined): PostSort {
  const [field, direction] = (sort ?? 'id').split(':');
  return { field: field as PostSort['field'], desc: direction === 'desc' };
}

export const sortName = (sort: PostSort) => `${sort.field}:${sort.desc ? 'desc' : 'asc'}`;

/**
 * Where a page ends, in a given order: the last post's id and, for an order by a timestamp, its value there (null
 * once the walk has reached the posts without one, which come last). A walk by keyset never repeats a post and never
 * misses one whose place in the order stays put while it pages.
 */
export interface PostCursor {
  after: string;
  /** The workspace of the post at `after`; absent in a cursor handed out before workspaces. */
  workspace?: string;
  /** The sort value at `after` (ISO 8601), or null for a post without one; absent for the order by id. */
  value?: string | null;
}

interface CursorBody {
  after?: unknown;
  workspace?: unknown;
  sort?: unknown;
  value?: unknown;
}

export function encodePostCursor(sort: PostSort, cursor: PostCursor): string {
  // The order by id writes no sort name (decodePostCursor reads its absence as id:asc), the form clients' cursors
  // without a sort name have, so one cursor form serves both.
  const body: CursorBody =
    sort.field === 'id' && !sort.desc
      ? { after: cursor.after, ...(cursor.workspace ? { workspace: cursor.workspace } : {}) }
      : { sort: sortName(sort), ...cursor };
  return Buffer.from(JSON.stringify(body)).toString('base64url');
}

export function decodePostCursor(cursor: string | undefined, sort: PostSort): PostCursor | null {
  if (cursor === undefined) return null;
  let body: CursorBody;
  try {
    body = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as CursorBody;
  } catch {
    throw invalidCursor();
  }
  if (typeof body !== 'object' || body === null || typeof body.after !== 'string' || body.after.length === 0 || !isStorableText(body.after)) {
    throw invalidCursor();
  }
  const made = typeof body.sort === 'string' ? body.sort : 'id:asc';
  if (made !== sortName(sort)) {
    throw new ApiError('invalid_query', `cursor was made for sort=${made}: pass the same sort with it`, [
      { field: 'cursor', problems: [`made for sort=${made}`] },
    ]);
  }
  if (body.workspace !== undefined && !isWorkspaceId(body.workspace)) throw invalidCursor();
  const workspace = body.workspace === undefined ? {} : { workspace: body.workspace };
  if (sort.field === 'id') return { after: body.after, ...workspace };
  const value = body.value;
  if (value !== null && (typeof value !== 'string' || Number.isNaN(Date.parse(value)))) throw invalidCursor();
  return { after: body.after, ...workspace, value };
}

const invalidCursor = () => new ApiError('invalid_query', 'cursor is not one this service returned (use nextCursor as given)');
