/**
 * What Pozy's API and webhooks show, as the simulator serves and sends it: posts, social accounts and profiles in
 * their REST shapes, and the webhook envelopes (`post.*`, `account.*`) with their blocks.
 */
export const POST_STATUSES = ['draft', 'scheduled', 'publishing', 'published', 'partial', 'failed', 'cancelled'] as const;
export type PostStatus = (typeof POST_STATUSES)[number];
export type TargetStatus = 'pending' | 'processing' | 'uploading' | 'published' | 'failed' | 'cancelled';
export type ErrorSource = 'user' | 'platform' | 'system';
export const ERROR_SOURCES = ['user', 'platform', 'system'] as const;
export const ERROR_CATEGORIES = [
  'auth_expired',
  'user_content',
  'user_abuse',
  'account_issue',
  'platform_rejected',
  'platform_error',
  'platform_rate_limit',
  'quota_exhausted',
  'system_error',
  'unknown',
] as const;
export type ErrorCategory = (typeof ERROR_CATEGORIES)[number];
/** The platforms whose failed targets carry `platformError` (the Graph API's error). */
export const META_PLATFORMS = ['facebook', 'instagram', 'threads'] as const;

export const MEDIA_TYPES = ['image', 'video', 'gif', 'document'] as const;
export type MediaType = (typeof MEDIA_TYPES)[number];
export interface MediaItem {
  type: MediaType;
  url: string;
  altText?: string;
  thumbnail?: string;
}

export const VISIBILITIES = ['public', 'private', 'unlisted'] as const;
export type Visibility = (typeof VISIBILITIES)[number];

/** A queued post's recycling settings, e.g. `{ enabled: true, intervalDays: 30 }`. */
export interface Recycling {
  enabled: boolean;
  intervalDays?: number;
  [key: string]: unknown;
}

/** What a Meta platform (facebook, instagram, threads) answered a failed publish with. */
export interface PlatformError {
  code?: number;
  subcode?: number;
  message: string;
}

/**
 * A post's fields beyond its content, accounts and schedule, as `createPost` and `editPost` take them and the REST
 * post shows them (each omitted when absent; `timezone` then shows 'UTC'). The queue fields belong on queued posts.
 */
export interface PostDetails {
  title?: string;
  mediaItems?: MediaItem[];
  tags?: string[];
  hashtags?: string[];
  mentions?: string[];
  visibility?: Visibility;
  /** Free-form, from the caller, e.g. `{ crmId: 'A-1042', campaign: 'spring' }`. */
  metadata?: Record<string, unknown>;
  /** IANA name, e.g. 'Europe/Berlin'. */
  timezone?: string;
  recycling?: Recycling;
  recycledFromPostId?: string;
  /** The profile whose queue scheduled the post. */
  queuedFromProfile?: string;
  queueId?: string;
}

/**
 * The unknown-field switch (`WorldOptions.unknownFields`, `PozyWorld.setUnknownFields`): while on, the REST shapes
 * carry these fields, which pozy-sync has never seen: a post `{ score: 0–100, model: 'v2' }`, a target an integer,
 * an account `true`.
 */
export const UNKNOWN_POST_FIELD = 'pozyLabsInsights';
export const UNKNOWN_TARGET_FIELD = 'pozyLabsReach';
export const UNKNOWN_ACCOUNT_FIELD = 'pozyLabsVerified';

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
  /** null when the account has no picture. */
  profilePicture: string | null;
  profileUrl: string;
  isActive: boolean;
  needsReconnection: boolean;
  enabled: boolean;
  /** On some accounts only: e.g. an Instagram account under its Facebook page. */
  parentAccountId?: string;
  metadata?: Record<string, unknown>;
  followersCount?: number;
  followersLastUpdated?: string;
  /** Only while the unknown-field switch is on. */
  [UNKNOWN_ACCOUNT_FIELD]?: true;
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
  errorCategory?: ErrorCategory;
  errorSource?: ErrorSource;
  /** Meta platforms only (facebook, instagram, threads). */
  platformError?: PlatformError;
  customContent?: string;
  customMedia?: MediaItem[];
  removedFromPlatformAt?: string;
  /** Only while the unknown-field switch is on. */
  [UNKNOWN_TARGET_FIELD]?: number;
}

/** Post as `GET /v1/posts/{id}` shows it; optional fields are omitted when absent. */
export interface Post extends Omit<PostDetails, 'timezone'> {
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
  /** Only while the unknown-field switch is on. */
  [UNKNOWN_POST_FIELD]?: { score: number; model: 'v2' };
}

export interface WebhookPostTarget {
  platform: string;
  status: TargetStatus;
  accountId: string;
  platformPostId?: string;
  publishedUrl?: string;
  error?: string;
  errorCategory?: ErrorCategory;
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
  errorCategory?: ErrorCategory;
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
