/**
 * The world's records as Pozy shows them: the REST resources (`GET /v1/posts/{id}`, `GET /v1/accounts`) and the
 * blocks of the webhook envelopes.
 */
import { iso } from './clock';
import {
  Account,
  MediaItem,
  PlatformTarget,
  Post,
  UNKNOWN_ACCOUNT_FIELD,
  UNKNOWN_POST_FIELD,
  UNKNOWN_TARGET_FIELD,
  WebhookAccountBlock,
  WebhookPostBlock,
} from './pozy-shapes';
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

/**
 * A deep copy of a JSON-like value (metadata, recycling, a platform error), so that no caller shares a record's
 * objects: an in-process caller changing what it got changes nothing in the world.
 */
export function copyJson<T>(value: T): T {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value.map(copyJson) as T;
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) out[key] = copyJson(item);
  return out as T;
}

export function copyMedia(items: readonly MediaItem[] | undefined): MediaItem[] | undefined {
  return items?.map((m) => compact({ type: m.type, url: m.url, altText: m.altText, thumbnail: m.thumbnail }));
}

export function restAccount(state: WorldState, record: AccountRecord): Account {
  const account: Account = compact({
    _id: record.id,
    platform: record.platform,
    profileId: { ...state.profiles.get(record.profileId)! },
    username: record.username,
    displayName: record.displayName,
    profilePicture: record.profilePicture,
    profileUrl: profileUrl(record.platform, record.username),
    isActive: record.isActive,
    needsReconnection: record.needsReconnection,
    enabled: record.enabled,
    parentAccountId: record.parentAccountId,
    metadata: copyJson(record.metadata),
    followersCount: record.followersCount,
    followersLastUpdated: record.followersLastUpdated === undefined ? undefined : iso(record.followersLastUpdated),
  });
  if (state.unknownFields) account[UNKNOWN_ACCOUNT_FIELD] = true;
  return account;
}

export function restPost(state: WorldState, record: PostRecord): Post {
  const details = record.details;
  const post: Post = compact({
    _id: record.id,
    userId: state.userId,
    title: details.title,
    content: record.content,
    mediaItems: copyMedia(details.mediaItems),
    status: record.status,
    scheduledFor: record.scheduledFor === undefined ? undefined : iso(record.scheduledFor),
    timezone: details.timezone ?? 'UTC',
    publishedAt: record.publishedAt === undefined ? undefined : iso(record.publishedAt),
    platforms: record.targets.map((t) => {
      const account = state.accounts.get(t.accountId);
      const target: PlatformTarget = compact({
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
        platformError: copyJson(t.platformError),
        customContent: t.customContent,
        customMedia: copyMedia(t.customMedia),
        removedFromPlatformAt: t.removedFromPlatformAt === undefined ? undefined : iso(t.removedFromPlatformAt),
      });
      if (state.unknownFields) target[UNKNOWN_TARGET_FIELD] = unknownReach(record.id, t.accountId);
      return target;
    }),
    tags: details.tags && [...details.tags],
    hashtags: details.hashtags && [...details.hashtags],
    mentions: details.mentions && [...details.mentions],
    visibility: details.visibility,
    metadata: copyJson(details.metadata),
    recycling: copyJson(details.recycling),
    recycledFromPostId: details.recycledFromPostId,
    queuedFromProfile: details.queuedFromProfile,
    queueId: details.queueId,
    createdAt: iso(record.createdAt),
    updatedAt: iso(record.updatedAt),
  });
  if (state.unknownFields) post[UNKNOWN_POST_FIELD] = { score: unknownScore(record.id), model: 'v2' };
  return post;
}

/** The unknown post field's score: 0–100, from the post id alone, so it never changes. */
export function unknownScore(postId: string): number {
  return parseInt(postId.slice(-6), 16) % 101;
}

/** The unknown target field: an integer (0–99,999) from the post id and the account id alone. */
export function unknownReach(postId: string, accountId: string): number {
  // FNV-1a over both ids.
  let hash = 0x811c9dc5;
  for (const id of [postId, accountId]) {
    for (let i = 0; i < id.length; i++) hash = Math.imul(hash ^ id.charCodeAt(i), 0x01000193) >>> 0;
  }
  return hash % 100_000;
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
