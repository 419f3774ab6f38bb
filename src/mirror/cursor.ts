import { ApiError } from '../common/api-error';
import { isWorkspaceId } from '../common/read-scope';
import { isStorableText } from '../common/storable-text';

/**
 * Opaque page cursors: the last row of the page, by its id and its workspace (two workspaces of one Pozy key hold
 * rows of the same id). A walk never repeats a row and never misses one that existed when it began; rows added
 * during the walk with keys behind the cursor show up in the next walk, not this one.
 */
export interface RowKey {
  after: string;
  /** Absent in a cursor handed out before workspaces: it ends at its id. */
  workspace?: string;
}

export function encodeCursor(last: { id: string; workspace_id: string }): string {
  return Buffer.from(JSON.stringify({ after: last.id, workspace: last.workspace_id })).toString('base64url');
}

export function decodeCursor(cursor: string | undefined): RowKey | null {
  if (cursor === undefined) return null;
  try {
    const { after, workspace } = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { after?: unknown; workspace?: unknown };
    // A cursor is the client's to echo: one edited to carry text PostgreSQL cannot take is as invalid as any other.
    if (typeof after === 'string' && after.length > 0 && isStorableText(after) && (workspace === undefined || isWorkspaceId(workspace))) {
      return workspace === undefined ? { after } : { after, workspace };
    }
  } catch {
    // fall through
  }
  throw new ApiError('invalid_query', 'cursor is not one this service returned (use nextCursor as given)');
}

/** One page: `limit` rows, and a cursor when one more row was found. */
export function page<T extends { id: string; workspace_id: string }>(rows: T[], limit: number): { data: T[]; nextCursor: string | null } {
  const data = rows.slice(0, limit);
  return { data, nextCursor: rows.length > limit ? encodeCursor(data[data.length - 1]) : null };
}
