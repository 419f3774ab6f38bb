import { ApiError } from '../common/api-error';

/** `409 ambiguous_id`: more than one of the workspaces a read covers holds a resource of this id. */
export const ambiguousId = (what: 'Post' | 'Account', id: string, workspaces: readonly string[]): ApiError =>
  new ApiError(
    'ambiguous_id',
    `${what} ${id} is held by ${workspaces.length} of the workspaces read (${workspaces.join(', ')}): name one with workspace=`,
    [{ field: 'workspace', problems: workspaces.map((workspace) => `held by ${workspace}`) }],
  );

/** The rows a read by id found: none or one, or 409 `ambiguous_id` when several workspaces hold that id. */
export function atMostOne<R extends { workspace_id: string }>(what: 'Post' | 'Account', id: string, rows: R[]): R[] {
  if (rows.length > 1)
    throw ambiguousId(
      what,
      id,
      rows.map((row) => row.workspace_id),
    );
  return rows;
}
