import { ApiError } from '../common/api-error';
import type { ChangeFilter, ChangePageRead, ChangeRow } from './change.repository';
import { nextCursor, oldestAvailable } from './change-cursor';
import { partitionOf, resourceOfType } from './partition';

export interface ChangeItem {
  cursor: string;
  workspaceId: string;
  type: string;
  id: string;
  sequence: number;
  changedAt: string;
  post?: unknown;
  account?: unknown;
}

export interface ChangePage {
  data: ChangeItem[];
  nextCursor: string;
}

const RESYNC =
  'Resynchronise: GET /changes/head, then page GET /posts and GET /accounts from the start, then follow GET /changes?after=<the head cursor>';

/** `410 cursor_expired` for a cursor older than the oldest change kept; undefined while it is still answered. */
export function expiredCursor(after: string, oldest: string | null): ApiError | undefined {
  const oldestCursor = oldestAvailable(oldest);
  if (oldestCursor === null || BigInt(after) >= BigInt(oldestCursor)) return undefined;
  return cursorExpired(`Cursor ${after} is older than the changes kept (CHANGE_RETENTION_DAYS)`, oldestCursor);
}

/** `410 cursor_expired`, the same body whatever expired it (retention, or a named consumer past CONSUMER_MAX_LAG_DAYS). */
export function cursorExpired(why: string, oldestCursor: string): ApiError {
  return new ApiError('cursor_expired', `${why}; the oldest cursor available is ${oldestCursor}. ${RESYNC}`, { oldestCursor, resync: RESYNC });
}

/** The answer to a read of `limit` entries after `after` that looked `scan` positions ahead. */
export function toPage(read: ChangePageRead, after: string, limit: number, scan: number): ChangePage {
  const data = read.rows.map((row): ChangeItem => ({
    cursor: row.position,
    workspaceId: row.workspace_id,
    type: row.type,
    id: row.resource_id,
    sequence: row.sequence,
    changedAt: row.changed_at.toISOString(),
    [row.type.startsWith('post.') ? 'post' : 'account']: row.data,
  }));
  return { data, nextCursor: nextCursor(after, read.newest, scan, data.length === limit ? data[data.length - 1].cursor : null) };
}

/**
 * Whether an entry matches the filter, exactly as ChangeRepository.page's SQL decides: `type = ANY(types)`,
 * `profileId = ANY(profile_ids)`, `platform = ANY(platforms)`, `profile_ids && profileIds`, `platforms && platforms`
 * (and the partition, which the repository also picks in memory). Text equality in PostgreSQL's deterministic collations
 * is equality of the strings, as here.
 */
export function matchesFilter(row: ChangeRow, filter: ChangeFilter): boolean {
  if (filter.workspaces !== undefined && !filter.workspaces.includes(row.workspace_id)) return false;
  if (filter.types !== undefined && !filter.types.some((type) => type === row.type)) return false;
  if (filter.profileId !== undefined && !row.profile_ids.includes(filter.profileId)) return false;
  if (filter.platform !== undefined && !row.platforms.includes(filter.platform)) return false;
  if (filter.profileIds !== undefined && !filter.profileIds.some((id) => row.profile_ids.includes(id))) return false;
  if (filter.platforms !== undefined && !filter.platforms.some((platform) => row.platforms.includes(platform))) return false;
  if (filter.partition !== undefined && partitionOf(resourceOfType(row.type), row.resource_id, filter.partition.of) !== filter.partition.index)
    return false;
  return true;
}

/**
 * An unfiltered read of the feed after `from`: every entry of (from, to] is among `rows`, in position order, and
 * `oldest`/`newest` are the bounds in the same snapshot.
 */
export interface ChangeWindow {
  from: bigint;
  to: bigint;
  rows: readonly ChangeRow[];
  positions: readonly bigint[];
  oldest: string | null;
  newest: string | null;
}

/** The window of `page(from, limit, limit, {})`: a full page ends at its last entry, a short one at the newest position (or its scan's end). */
export function windowOf(from: bigint, read: ChangePageRead, limit: number): ChangeWindow {
  const last = read.rows.length === limit ? read.rows[read.rows.length - 1].position : null;
  return {
    from,
    to: BigInt(nextCursor(from.toString(), read.newest, limit, last)),
    rows: read.rows,
    positions: read.rows.map((row) => BigInt(row.position)),
    oldest: read.oldest,
    newest: read.newest,
  };
}

/**
 * What `ChangeRepository.page(after, limit, scan, filter)` would have answered in the snapshot the window was read in,
 * computed from the window alone; undefined when the answer depends on entries past the window (more than it holds
 * were placed at once), or before it. Positions are dense, so the window holds every entry of its range.
 */
export function readFromWindow(window: ChangeWindow, after: string, limit: number, scan: number, filter: ChangeFilter): ChangePageRead | undefined {
  const from = BigInt(after);
  if (from < window.from) return undefined;
  const bound = from + BigInt(scan);
  const rows: ChangeRow[] = [];
  let i = firstAfter(window.positions, from);
  for (; i < window.rows.length && rows.length < limit && window.positions[i] <= bound; i += 1) {
    if (matchesFilter(window.rows[i], filter)) rows.push(window.rows[i]);
  }
  if (rows.length < limit) {
    // The read looked up to the end of its scan, or the newest position: the window must reach that far.
    const top = window.newest === null ? from : BigInt(window.newest);
    const end = bound < top ? bound : top;
    if (end > window.to) return undefined;
  }
  return { rows, oldest: window.oldest, newest: window.newest };
}

/** The index of the first position greater than `after` (positions ascending). */
function firstAfter(positions: readonly bigint[], after: bigint): number {
  let low = 0;
  let high = positions.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (positions[middle] <= after) low = middle + 1;
    else high = middle;
  }
  return low;
}

/**
 * `earlier` followed by `later` (which was read from `earlier.to` on), as one window in `later`'s snapshot: placed
 * entries never change, and retention only removes positions before every cursor it still answers. Keeps at most the
 * last `keep` entries.
 */
export function joinWindows(earlier: ChangeWindow, later: ChangeWindow, keep: number): ChangeWindow {
  const rows = [...earlier.rows, ...later.rows];
  const positions = [...earlier.positions, ...later.positions];
  const drop = Math.max(0, rows.length - keep);
  return {
    from: drop > 0 ? positions[drop - 1] : earlier.from,
    to: later.to,
    rows: rows.slice(drop),
    positions: positions.slice(drop),
    oldest: later.oldest,
    newest: later.newest,
  };
}
