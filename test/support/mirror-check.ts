import { isDeepStrictEqual } from 'node:util';
import type { Pool } from 'pg';
import type { PozyWorld } from '../../simulator/world';
import type { PlatformTarget } from '../../simulator/world/pozy-shapes';

interface PostRow {
  id: string;
  status: string;
  content: string | null;
  scheduled_for: Date | null;
  published_at: Date | null;
  platforms: Array<Record<string, unknown>>;
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
  removed_at: Date | null;
}

const time = (value: string | undefined) => (value === undefined ? null : new Date(value).toISOString());
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
): Promise<string[]> {
  const differences: string[] = [];
  const { rows: postRows } = await pool.query<PostRow>('SELECT * FROM post');
  const mirrored = new Map(postRows.map((r) => [r.id, r]));

  for (const id of seen.postIds) {
    const row = mirrored.get(id);
    if (!row) {
      differences.push(`post ${id}: missing from the mirror`);
      continue;
    }
    if (world.wasDeleted(id)) {
      if (!row.deleted_at) differences.push(`post ${id}: deleted in Pozy, not in the mirror`);
      continue;
    }
    // Only the posts asked about are shaped: on a world of 100,000 posts, a whole snapshot per check is slow.
    const post = world.getPost(id);
    if (!post) continue;
    const expected = {
      status: post.status,
      content: post.content,
      scheduledFor: time(post.scheduledFor),
      publishedAt: time(post.publishedAt),
      pozyUpdatedAt: time(post.updatedAt),
      deletedAt: null,
      platforms: post.platforms.map((t) => ({
        platform: t.platform,
        accountId: accountIdOf(t),
        status: t.status,
        platformPostId: t.platformPostId ?? null,
        platformPostUrl: t.platformPostUrl ?? null,
        publishedAt: time(t.publishedAt),
        errorMessage: t.errorMessage ?? null,
      })),
    };
    const actual = {
      status: row.status,
      content: row.content,
      scheduledFor: row.scheduled_for?.toISOString() ?? null,
      publishedAt: row.published_at?.toISOString() ?? null,
      pozyUpdatedAt: row.pozy_updated_at?.toISOString() ?? null,
      deletedAt: row.deleted_at,
      platforms: row.platforms.map((t) => ({ ...t, publishedAt: time((t.publishedAt as string | null) ?? undefined) })),
    };
    if (!isDeepStrictEqual(actual, expected)) {
      differences.push(`post ${id}: mirror ${JSON.stringify(actual)} != Pozy ${JSON.stringify(expected)}`);
    }
  }

  const { rows: accountRows } = await pool.query<AccountRow>('SELECT * FROM account');
  const accounts = new Map(accountRows.map((r) => [r.id, r]));
  const removed = new Set(world.removedAccountIds());
  const profiles = new Set(seen.profileIds);
  for (const account of world.listAccounts().filter((a) => profiles.has(a.profileId._id))) {
    const row = accounts.get(account._id);
    const expected = {
      profileId: account.profileId._id,
      platform: account.platform,
      username: account.username,
      displayName: account.displayName,
      isActive: account.isActive,
      needsReconnection: account.needsReconnection,
      removed: false,
    };
    const actual = row && {
      profileId: row.profile_id,
      platform: row.platform,
      username: row.username,
      displayName: row.display_name,
      isActive: row.is_active,
      needsReconnection: row.needs_reconnection,
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
