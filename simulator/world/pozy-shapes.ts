/**
 * What Pozy's API and webhooks show, as the simulator serves and sends it: posts, social accounts and profiles in
 * their REST shapes, and the webhook envelopes (`post.*`, `account.*`) with their blocks.
 */
export const POST_STATUSES = ['draft', 'scheduled', 'publishing', 'published', 'partial', 'failed', 'cancelled'] as const;
export type PostStatus = (typeof POST_STATUSES)[number];
export type TargetStatus = 'pending' | 'processing' | 'uploading' | 'published' | 'failed' | 'cancelled';
export type ErrorSource = 'user' | 'platform' | 'system';

export const PLATFORMS = ['twitter', 'instagram', 'linkedin', 'facebook', 'tiktok', 'threads', 'bluesky', 'youtube', 'pinterest'] as const;

/** `GET /v1/posts`'s `sortBy` values; `scheduled-desc` is the default. */
export const POST_SORTS = ['scheduled-desc', 'scheduled-asc', 'created-desc', 'created-asc', 'status', 'platform'] as const;
export type PostSort = (typeof POST_SORTS)[number];

export interface Profile {
  _id: string;
  name: string;
  slug: string;
}

/** SocialAccount as `GET /v1/accounts` shows it: `profileId` populated, as in Pozy's list example. */
export interface Account {
  _id: string;
  platform: string;
  profileId: Profile;
  username: string;
  displayName: string;
  profileUrl: string;
  isActive: boolean;
  needsReconnection: boolean;
  enabled: boolean;
}

export interface PopulatedAccountRef {
  _id: string;
  platform: string;
  username: string;
  displayName: string;
  isActive: boolean;
}

/** A post's target on one account, REST shape. `accountId` is populated unless the account was removed. */
export interface PlatformTarget {
  platform: string;
  accountId: string | PopulatedAccountRef;
  status: TargetStatus;
  platformPostId?: string;
  platformPostUrl?: string;
  publishedAt?: string;
  errorMessage?: string;
  errorCategory?: string;
  errorSource?: ErrorSource;
  removedFromPlatformAt?: string;
}

/** Post as `GET /v1/posts/{id}` shows it. */
export interface Post {
  _id: string;
  userId: string;
  content: string;
  status: PostStatus;
  scheduledFor?: string;
  timezone: string;
  publishedAt?: string;
  platforms: PlatformTarget[];
  createdAt: string;
  updatedAt: string;
}

export interface WebhookPostTarget {
  platform: string;
  status: TargetStatus;
  accountId: string;
  platformPostId?: string;
  publishedUrl?: string;
  error?: string;
  errorCategory?: string;
  errorSource?: ErrorSource;
}

export interface WebhookPostBlock {
  id: string;
  content: string;
  status: PostStatus;
  scheduledFor?: string;
  publishedAt?: string;
  platforms: WebhookPostTarget[];
}

export interface WebhookPlatformBlock {
  name: string;
  status: 'published' | 'failed' | 'deleted';
  platformPostId?: string;
  publishedUrl?: string;
  error?: string;
  errorCategory?: string;
  errorSource?: ErrorSource;
  deletedAt?: string;
}

export interface WebhookAccountBlock {
  accountId: string;
  profileId?: string;
  platform: string;
  username: string;
  displayName?: string;
  disconnectionType?: 'intentional' | 'unintentional';
  reason?: string;
}

export type PozyEventType =
  | 'post.scheduled'
  | 'post.published'
  | 'post.partial'
  | 'post.failed'
  | 'post.cancelled'
  | 'post.platform.published'
  | 'post.platform.failed'
  | 'post.platform.deleted'
  | 'account.connected'
  | 'account.disconnected'
  | 'webhook.test';

/** A webhook envelope: `{id, event, timestamp, <blocks>}`, no `data` wrapper; absent blocks are omitted. */
export interface PozyEvent {
  id: string;
  event: PozyEventType;
  timestamp: string;
  message?: string;
  test?: true;
  post?: WebhookPostBlock;
  platform?: WebhookPlatformBlock;
  account?: WebhookAccountBlock;
}
