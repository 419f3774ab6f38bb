import { ApiError } from '../common/api-error';
import { isStorableText } from '../common/storable-text';

/**
 * Opaque page cursors: the last id of the page. A walk never repeats a row and never misses one that existed when
 * it began; rows added during the walk with ids behind the cursor show up in the next walk, not this one.
 */
export function encodeCursor(lastId: string): string {
  return Buffer.from(JSON.stringify({ after: lastId })).toString('base64url');
}

export function decodeCursor(cursor: string | undefined): string | null {
  if (cursor === undefined) return null;
  try {
    const { after } = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { after?: unknown };
    // A cursor is the client's to echo: one edited to carry text PostgreSQL cannot take is as invalid as any other.
    if (typeof after === 'string' && after.length > 0 && isStorableText(after)) return after;
  } catch {
    // fall through
  }
  throw new ApiError(400, 'invalid_query', 'cursor is not one this service returned (use nextCursor as given)');
}

/** One page: `limit` rows, and a cursor when one more row was found. */
export function page<T extends { id: string }>(rows: T[], limit: number): { data: T[]; nextCursor: string | null } {
  const data = rows.slice(0, limit);
  return { data, nextCursor: rows.length > limit ? encodeCursor(data[data.length - 1].id) : null };
}
