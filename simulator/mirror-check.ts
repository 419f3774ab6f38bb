import { isDeepStrictEqual } from 'node:util';
import type { Pool } from 'pg';
import type { PozyWorld } from './world';
import type { PlatformTarget } from './world/pozy-shapes';

interface PostRow {
  id: string;
  status: string;
  title: string | null;
  content: string | null;
  scheduled_for: Date | null;
  published_at: Date | null;
  platforms: Array<Record<string, unknown>>;
  tags: string[] | null;
  hashtags: string[] | null;
  visibility: string | null;
  extra: Record<string, unknown> | null;
  pozy_created_at: Date | null;
  pozy_updated_at: Date | null;
  deleted_at: Date | null;
}

interface AccountRow {
  id: string;
  profile_id: string;
  platform: string;
  username: string | null;
  display_name: string | null;
  is_active: boolean;
  needs_reconnection: boolean;
  enabled: boolean | null;
  extra: Record<string, unknown> | null;
  removed_at: Date | null;
}

const POST_TIMES = ['scheduledFor', 'publishedAt', 'createdAt', 'updatedAt'];

/** The post's own timestamps as instants, whatever their form (the mirror keeps those in timestamp columns). */
function withTimes(post: Record<string, unknown>, keys: string[]): Record<string, unknown> {
  const out = { ...post };
  for (const key of keys) {
    const value = out[key];
    if (value instanceof Date || typeof value === 'string') out[key] = new Date(value).toISOString();
  }
  return out;
}

/** A field Pozy left out answers as null (or an empty list) in the mirror: not a difference. */
function withoutEmptyExtras(mirrored: Record<string, unknown>, pozy: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(mirrored)) {
    const empty = value === null || (Array.isArray(value) && value.length === 0);
    if (key in pozy || !empty) out[key] = value;
  }
  return out;
}
const accountIdOf = (target: PlatformTarget) => (typeof target.accountId === 'string' ? target.accountId : target.accountId._id);

/**
 * Compares pozy-sync's mirror (its database) with the simulator's world: used by the tests and by `npm run demo`.
 * It reads the tables with its own SQL, not the service's repositories, so that it cannot share their mistakes.
 * Every difference between the mirror and the simulator's world, for the posts and profiles that had events
 * (a resource no event ever named cannot be in the mirror, and is the full sweep's business). Empty means equal.
 */
export async function mirrorDifferences(
  pool: Pool,
  world: PozyWorld,
  seen: { postIds: Iterable<string>; profileIds: Iterable<string> },
  /** One workspace's rows only; every row when absent (a deployment of one workspace). */
  workspaceId?: string,
): Promise<string[]> {
  const differences: string[] = [];
  const { rows: postRows } = await (workspaceId === undefined
    ? pool.query<PostRow>('SELECT * FROM post')
    : pool.query<PostRow>('SELECT * FROM post WHERE workspace_id = $1', [workspaceId]));
  const mirrored = new Map(postRows.map((r) => [r.id, r]));

  for (const id of seen.postIds) {
    const row = mirrored.get(id);
    if (!row) {
      // Deleted in Pozy before any read found it: the mirror never held it, and a 404 for it writes nothing.
      if (!world.wasDeleted(id)) differences.push(`post ${id}: missing from the mirror`);
      continue;
    }
    if (world.wasDeleted(id)) {
      if (!row.deleted_at) differences.push(`post ${id}: deleted in Pozy, not in the mirror`);
      continue;
    }
    // Only the posts asked about are shaped: on a world of 100,000 posts, a whole snapshot per check is slow.
    const post = world.getPost(id);
    if (!post) continue;
    // The whole post, every field Pozy answered: `_id` as `id`, accountId as the plain id.
    const { _id, ...fields } = post;
    const expected = withTimes({ id: _id, ...fields, platforms: post.platforms.map((t) => ({ ...t, accountId: accountIdOf(t) })) }, POST_TIMES);
    const stored = withTimes(
      {
        id: row.id,
        status: row.status,
        title: row.title,
        content: row.content,
        scheduledFor: row.scheduled_for,
        publishedAt: row.published_at,
        platforms: row.platforms,
        tags: row.tags,
        hashtags: row.hashtags,
        visibility: row.visibility,
        createdAt: row.pozy_created_at,
        updatedAt: row.pozy_updated_at,
        ...(row.extra ?? {}),
      },
      POST_TIMES,
    );
    const actual = { ...withoutEmptyExtras(stored, expected), deletedAt: row.deleted_at };
    Object.assign(expected, { deletedAt: null });
    if (!isDeepStrictEqual(actual, expected)) {
      differences.push(`post ${id}: mirror ${JSON.stringify(actual)} != Pozy ${JSON.stringify(expected)}`);
    }
  }

  const { rows: accountRows } = await (workspaceId === undefined
    ? pool.query<AccountRow>('SELECT * FROM account')
    : pool.query<AccountRow>('SELECT * FROM account WHERE workspace_id = $1', [workspaceId]));
  const accounts = new Map(accountRows.map((r) => [r.id, r]));
  const removed = new Set(world.removedAccountIds());
  const profiles = new Set(seen.profileIds);
  for (const account of world.listAccounts().filter((a) => profiles.has(a.profileId._id))) {
    const row = accounts.get(account._id);
    const { _id, ...fields } = account;
    const expected = { id: _id, ...fields, profileId: account.profileId._id, removed: false };
    const actual = row && {
      ...withoutEmptyExtras(
        {
          id: row.id,
          profileId: row.profile_id,
          platform: row.platform,
          username: row.username,
          displayName: row.display_name,
          isActive: row.is_active,
          needsReconnection: row.needs_reconnection,
          enabled: row.enabled,
          ...(row.extra ?? {}),
        },
        expected,
      ),
      removed: row.removed_at !== null,
    };
    if (!isDeepStrictEqual(actual, expected)) {
      differences.push(`account ${account._id}: mirror ${JSON.stringify(actual)} != Pozy ${JSON.stringify(expected)}`);
    }
  }
  for (const row of accountRows) {
    if (removed.has(row.id) && profiles.has(row.profile_id) && row.removed_at === null) {
      differences.push(`account ${row.id}: removed in Pozy, not in the mirror`);
    }
  }
  return differences;
}
