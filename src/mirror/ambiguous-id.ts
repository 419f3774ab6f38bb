import { ApiError } from '../common/api-error';

/** `409 ambiguous_id`: more than one of the workspaces a read covers holds a resource of this id. */
export const ambiguousId = (what: 'Post' | 'Account', id: string, workspaces: readonly string[]): ApiError =>
  new ApiError(
    409,
    'ambiguous_id',
    `${what} ${id} is held by ${workspaces.length} of the workspaces read (${workspaces.join(', ')}): name one with workspace=`,
    [{ field: 'workspace', problems: workspaces.map((workspace) => `held by ${workspace}`) }],
  );
