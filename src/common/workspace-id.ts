/**
 * A workspace is one Pozy API key's data. Every per-workspace row carries its workspace's id, first in each of its
 * table's keys (prisma/schema.prisma), so that a table can be partitioned or distributed by it without a redesign.
 */

/** The workspace of the environment's POZY_API_KEY, and of every row a single-workspace deployment wrote before. */
export const DEFAULT_WORKSPACE = 'default';

/** A workspace id: a slug an operator chooses, short enough for a label and a URL path segment. */
export const WORKSPACE_ID = /^[a-z0-9][a-z0-9-]{0,62}$/;

export type WorkspaceId = string;
