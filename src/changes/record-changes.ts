import { Selectable } from 'kysely';
import type { Db } from '../database/database.service';
import type { DB } from '../generated/kysely/database';

/** What each kind of change is called, in the feed and in notifications alike. */
export const CHANGE_TYPES = ['post.changed', 'post.deleted', 'account.changed', 'account.removed'] as const;
export type ChangeType = (typeof CHANGE_TYPES)[number];

/**
 * A row of a mirror write's `changes` CTE, as the feed keeps it: `resource` is the post or account exactly as
 * GET /posts/:id or GET /accounts/:id answers it right after the change.
 */
export type FeedChange = Pick<Selectable<DB['change']>, 'workspace_id' | 'type' | 'resource_id' | 'sequence' | 'profile_ids' | 'platforms'> & {
  resource: Selectable<DB['change']>['data'];
};

/**
 * The `recorded` CTE of a mirror write: every row of its `changes` CTE appended to the change feed, in the write's
 * own statement, so a change and its feed entry commit together or not at all. The entry has no position yet: the
 * sequencer gives it one once the write has committed.
 */
export const recordChanges = (db: Db) =>
  db
    .withTables<{ changes: FeedChange }>()
    .insertInto('change')
    .columns(['workspace_id', 'type', 'resource_id', 'sequence', 'profile_ids', 'platforms', 'data'])
    .expression((eb) =>
      eb
        .selectFrom('changes as c')
        .select(['c.workspace_id', 'c.type', 'c.resource_id', 'c.sequence', 'c.profile_ids', 'c.platforms', 'c.resource as data']),
    )
    .returning((eb) => eb.lit(1).as('one'));
