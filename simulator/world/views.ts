/**
 * The world's records as Pozy shows them: the REST resources (`GET /v1/posts/{id}`, `GET /v1/accounts`) and the
 * blocks of the webhook envelopes.
 */
import { iso } from './clock';
import type { Account, Post, WebhookAccountBlock, WebhookPostBlock } from './pozy-shapes';
import type { AccountRecord, PostRecord, WorldState } from './state';

/**
 * A copy without the keys whose value is undefined, so optional fields are omitted rather than present as
 * undefined. Copied rather than deleted in place: objects with deleted keys are slow to serialize.
 */
export function compact<T extends object>(value: T): T {
  const out = {} as T;
  for (const key of Object.keys(value) as (keyof T)[]) if (value[key] !== undefined) out[key] = value[key];
  return out;
}

export function restAccount(state: WorldState, record: AccountRecord): Account {
  return {
    _id: record.id,
    platform: record.platform,
    profileId: { ...state.profiles.get(record.profileId)! },
    username: record.username,
    displayName: record.displayName,
    profileUrl: profileUrl(record.platform, record.username),
    isActive: record.isActive,
    needsReconnection: record.needsReconnection,
    enabled: true,
  };
}

export function restPost(state: WorldState, record: PostRecord): Post {
  return compact({
    _id: record.id,
    userId: state.userId,
    content: record.content,
    status: record.status,
    scheduledFor: record.scheduledFor === undefined ? undefined : iso(record.scheduledFor),
    timezone: 'UTC',
    publishedAt: record.publishedAt === undefined ? undefined : iso(record.publishedAt),
    platforms: record.targets.map((t) => {
      const account = state.accounts.get(t.accountId);
      return compact({
        platform: t.platform,
        accountId:
          account && !account.removed
            ? {
                _id: account.id,
                platform: account.platform,
                username: account.username,
                displayName: account.displayName,
                isActive: account.isActive,
              }
            : t.accountId,
        status: t.status,
        platformPostId: t.platformPostId,
        platformPostUrl: t.platformPostUrl,
        publishedAt: t.publishedAt === undefined ? undefined : iso(t.publishedAt),
        errorMessage: t.errorMessage,
        errorCategory: t.errorCategory,
        errorSource: t.errorSource,
        removedFromPlatformAt: t.removedFromPlatformAt === undefined ? undefined : iso(t.removedFromPlatformAt),
      });
    }),
    createdAt: iso(record.createdAt),
    updatedAt: iso(record.updatedAt),
  });
}

export function postEventBlock(record: PostRecord): WebhookPostBlock {
  return compact({
    id: record.id,
    content: record.content,
    status: record.status,
    scheduledFor: record.scheduledFor === undefined ? undefined : iso(record.scheduledFor),
    publishedAt: record.publishedAt === undefined ? undefined : iso(record.publishedAt),
    platforms: record.targets.map((t) =>
      compact({
        platform: t.platform,
        status: t.status,
        accountId: t.accountId,
        platformPostId: t.platformPostId,
        publishedUrl: t.platformPostUrl,
        error: t.errorMessage,
        errorCategory: t.errorCategory,
        errorSource: t.errorSource,
      }),
    ),
  });
}

export function accountEventBlock(record: AccountRecord): WebhookAccountBlock {
  return {
    accountId: record.id,
    profileId: record.profileId,
    platform: record.platform,
    username: record.username,
    displayName: record.displayName,
  };
}

function profileUrl(platform: string, username: string): string {
  switch (platform) {
    case 'twitter':
      return `https://x.com/${username}`;
    case 'instagram':
      return `https://www.instagram.com/${username}/`;
    case 'linkedin':
      return `https://www.linkedin.com/company/${username}`;
    case 'facebook':
      return `https://www.facebook.com/${username}`;
    case 'tiktok':
      return `https://www.tiktok.com/@${username}`;
    default:
      return `https://${platform}.example/${username}`;
  }
}
