import { ArrayMaxSize, Matches } from 'class-validator';
import { ListParam } from './query-params';
import { ConsistencyQuery } from './read-consistency';
import { WORKSPACE_ID } from './workspace-id';

/** A read asks for at most this many workspaces by name; a reader of more reads them all by naming none. */
export const MAX_WORKSPACES_ASKED = 100;

/**
 * `workspace`: the workspaces a read covers, one id or a comma-separated list, cut to those the reader may read (a
 * token's scope); none named: every workspace the reader may read.
 */
export class WorkspaceQuery extends ConsistencyQuery {
  @ListParam('Only these workspaces (one id, or a comma-separated list); default: every workspace the token may read.', 'default')
  @ArrayMaxSize(MAX_WORKSPACES_ASKED)
  @Matches(WORKSPACE_ID, { each: true, message: 'workspace must hold workspace ids (lower-case letters, digits and -, 1 to 63)' })
  workspace?: string[];
}
