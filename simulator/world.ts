/**
 * The simulated Pozy workspace: profiles, social accounts and posts, held in memory. Every mutation happens at a
 * strictly later millisecond than the one before, changes the state and then emits the webhook events Pozy would
 * (the `post.*` and `account.*` envelopes below) to the listeners; the simulator hands those to its webhook sender.
 * Ids, event ids and every random choice come from the seeded Rng, so a seed (and a fixed clock) replays exactly.
 * Posts are kept in creation order, which is also createdAt order: `GET /v1/posts?sortBy=created-asc` pages by
 * position in it.
 */
import { CreationOrder } from './creation-order';
import { Rng } from './faults';

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

export interface WorldSnapshot {
  posts: Post[];
  deletedPostIds: string[];
  accounts: Account[];
  removedAccountIds: string[];
}

export type PublishOutcome = 'published' | 'failed';

/** One page of `GET /v1/posts`: filters (absent: any), order, and the slice. */
export interface PostQuery {
  status?: PostStatus;
  platform?: string;
  profileId?: string;
  accountId?: string;
  createdBy?: string;
  /** Bounds (ms, inclusive) on scheduledFor, or createdAt for a post without one. */
  from?: number;
  to?: number;
  /** Lowercase; found in the lowercased content. */
  search?: string;
  sortBy: PostSort;
  offset: number;
  limit: number;
}

/** `GET /v1/accounts`: filters (absent: any) and, when paged, the slice. */
export interface AccountQuery {
  profileId?: string;
  platform?: string;
  /** true: active only; false: disconnected only. */
  connected?: boolean;
  offset?: number;
  limit?: number;
}

/** A workspace that existed before pozy-sync was deployed (`seedExisting`). */
export interface ExistingWorkspace {
  posts: number;
  accounts: number;
  /** Default: one per 8 accounts, so each profile's accounts are on distinct platforms. */
  profiles?: number;
}

/** A mutation the world refuses (unknown id, or not allowed in the current state). */
export class WorldError extends Error {
  constructor(
    readonly code: 'not_found' | 'invalid_state' | 'invalid_argument',
    message: string,
  ) {
    super(message);
    this.name = 'WorldError';
  }
}

export interface WorldOptions {
  seed?: number;
  /** Wall clock in ms; the world never goes back and never repeats a millisecond. A fixed clock makes times replay too. */
  clock?: () => number;
}

export interface StepResult {
  action: string;
  postId?: string;
  accountId?: string;
  profileId?: string;
}

interface AccountRecord {
  id: string;
  profileId: string;
  platform: string;
  username: string;
  displayName: string;
  isActive: boolean;
  needsReconnection: boolean;
  removed: boolean;
  /** The account's own version: the time of its last mutation (not part of Pozy's SocialAccount). */
  updatedAt: number;
}

interface TargetRecord {
  accountId: string;
  platform: string;
  status: TargetStatus;
  platformPostId?: string;
  platformPostUrl?: string;
  publishedAt?: number;
  errorMessage?: string;
  errorCategory?: string;
  errorSource?: ErrorSource;
  removedFromPlatformAt?: number;
}

interface PostRecord {
  id: string;
  /** In `postOrder`. */
  position: number;
  content: string;
  status: PostStatus;
  scheduledFor?: number;
  publishedAt?: number;
  targets: TargetRecord[];
  createdAt: number;
  updatedAt: number;
  deleted: boolean;
}

interface Failure {
  message: string;
  category: string;
  source: ErrorSource;
}

const AUTH_EXPIRED: Failure = { message: 'Token expired; reconnect', category: 'auth_expired', source: 'user' };
const FAILURES: readonly Failure[] = [
  AUTH_EXPIRED,
  { message: 'Media format not supported by the platform', category: 'platform_rejected', source: 'platform' },
  { message: 'Duplicate content rejected by the platform', category: 'user_content', source: 'user' },
  { message: 'The platform answered with an internal error', category: 'platform_error', source: 'platform' },
  { message: 'Platform rate limit reached', category: 'platform_rate_limit', source: 'platform' },
];

/** Kinds of existing posts, and per age their cumulative shares (the rest is published). */
const EXISTING_KINDS = ['scheduled', 'draft', 'cancelled', 'failed', 'partial'] as const;
const EXISTING_MIX = {
  // Under an hour old: not published yet.
  lastHour: [0.7, 1, 1, 1, 1],
  lastTwoWeeks: [0.4, 0.5, 0.55, 0.6, 0.66],
  older: [0.02, 0.08, 0.15, 0.21, 0.29],
} as const;

const WORDS = ['spring', 'sale', 'launch', 'today', 'new', 'team', 'update', 'coffee', 'studio', 'weekly', 'tips', 'demo'];
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const YEAR = 365 * DAY;

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * A copy without the keys whose value is undefined, so optional fields are omitted rather than present as
 * undefined. Copied rather than deleted in place: objects with deleted keys are slow to serialize.
 */
function compact<T extends object>(value: T): T {
  const out = {} as T;
  for (const key of Object.keys(value) as (keyof T)[]) if (value[key] !== undefined) out[key] = value[key];
  return out;
}

export class PozyWorld {
  /** The workspace owner; Pozy's `userId` on posts and webhook logs. */
  readonly userId: string;
  private readonly rng: Rng;
  private readonly clock: () => number;
  private lastTime = 0;
  private readonly listeners = new Set<(event: PozyEvent) => void>();
  private readonly profiles = new Map<string, Profile>();
  private readonly profileIds: string[] = [];
  /** Every account, removed ones included, in connection order. */
  private readonly accounts = new Map<string, AccountRecord>();
  /** Accounts not removed, in connection order. */
  private readonly liveAccounts: AccountRecord[] = [];
  /** Per profile, its accounts (removed ones included) in connection order. */
  private readonly accountsOfProfile = new Map<string, AccountRecord[]>();
  /** Live accounts grouped by profile, for random posts; rebuilt after an account is connected or removed. */
  private postGroups: AccountRecord[][] | undefined;
  private readonly posts = new Map<string, PostRecord>();
  /** Posts not deleted, in creation order. */
  private readonly postOrder = new CreationOrder<PostRecord>();
  private accountCounter = 0;

  constructor(options: WorldOptions = {}) {
    this.rng = new Rng(options.seed ?? 1);
    this.clock = options.clock ?? Date.now;
    this.userId = this.rng.objectId();
  }

  /** Calls `listener` with every event, in the order they happen. Returns the unsubscribe function. */
  onEvent(listener: (event: PozyEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The time of the latest mutation (ms). */
  get time(): number {
    return this.lastTime;
  }

  // ---- profiles and accounts ----

  createProfile(name: string): Profile {
    this.tick();
    const profile: Profile = {
      _id: this.rng.objectId(),
      name,
      slug: name.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '') || 'profile',
    };
    this.addProfile(profile);
    return { ...profile };
  }

  connectAccount(profileId: string, platform: string, username: string, displayName?: string): Account {
    if (!this.profiles.has(profileId)) throw new WorldError('not_found', `No profile ${profileId}`);
    const time = this.tick();
    const record: AccountRecord = {
      id: this.rng.objectId(),
      profileId,
      platform,
      username,
      displayName: displayName ?? displayNameOf(username),
      isActive: true,
      needsReconnection: false,
      removed: false,
      updatedAt: time,
    };
    this.addAccount(record);
    this.emit(time, 'account.connected', { account: this.accountEventBlock(record) });
    return this.restAccount(record);
  }

  /** Intentional: the user disconnected it. Unintentional: the platform declared the token dead (needs reconnection). */
  disconnectAccount(accountId: string, options: { intentional?: boolean; reason?: string } = {}): Account {
    const record = this.liveAccount(accountId);
    if (!record.isActive) throw new WorldError('invalid_state', `Account ${accountId} is already disconnected`);
    const time = this.tick();
    const intentional = options.intentional ?? false;
    record.isActive = false;
    record.needsReconnection = !intentional;
    record.updatedAt = time;
    this.emit(time, 'account.disconnected', {
      account: {
        ...this.accountEventBlock(record),
        disconnectionType: intentional ? 'intentional' : 'unintentional',
        reason: options.reason ?? (intentional ? 'Disconnected by the user' : 'Token expired or revoked'),
      },
    });
    return this.restAccount(record);
  }

  reconnectAccount(accountId: string): Account {
    const record = this.liveAccount(accountId);
    if (record.isActive) throw new WorldError('invalid_state', `Account ${accountId} is connected`);
    const time = this.tick();
    record.isActive = true;
    record.needsReconnection = false;
    record.updatedAt = time;
    this.emit(time, 'account.connected', { account: this.accountEventBlock(record) });
    return this.restAccount(record);
  }

  /** Gone from its profile's list; Pozy sends no event for it. Posts keep its id, unpopulated. */
  removeAccount(accountId: string): void {
    const record = this.liveAccount(accountId);
    record.removed = true;
    record.updatedAt = this.tick();
    this.liveAccounts.splice(this.liveAccounts.indexOf(record), 1);
    this.postGroups = undefined;
  }

  // ---- posts ----

  /** With `scheduledFor`: `scheduled` and `post.scheduled`; without: a `draft`, and no event. */
  createPost(input: { content: string; accountIds: readonly string[]; scheduledFor?: string | number | Date }): Post {
    if (typeof input.content !== 'string') throw new WorldError('invalid_argument', 'content must be a string');
    if (input.accountIds.length === 0) throw new WorldError('invalid_argument', 'A post needs at least one account');
    if (new Set(input.accountIds).size !== input.accountIds.length) throw new WorldError('invalid_argument', 'Duplicate account');
    const targets = input.accountIds.map((accountId): TargetRecord => {
      const account = this.liveAccount(accountId);
      return { accountId, platform: account.platform, status: 'pending' };
    });
    let scheduledFor: number | undefined;
    if (input.scheduledFor !== undefined) {
      scheduledFor = new Date(input.scheduledFor).getTime();
      if (Number.isNaN(scheduledFor)) throw new WorldError('invalid_argument', 'scheduledFor is not a date');
    }
    const time = this.tick();
    const record: PostRecord = {
      id: this.rng.objectId(),
      position: 0,
      content: input.content,
      status: scheduledFor === undefined ? 'draft' : 'scheduled',
      scheduledFor,
      targets,
      createdAt: time,
      updatedAt: time,
      deleted: false,
    };
    this.addPost(record);
    if (record.status === 'scheduled') this.emit(time, 'post.scheduled', { post: this.postEventBlock(record) });
    return this.restPost(record);
  }

  /**
   * Publishes a draft or scheduled post, one target after the other: each ends `published` or `failed` (by
   * default: published, unless its account is disconnected or removed) and fires `post.platform.*` while the post
   * is still `publishing`; then the rollup `post.published` / `post.partial` / `post.failed`.
   * A draft gets `scheduledFor` = the moment publishing started (publish now).
   */
  publishPost(postId: string, outcomes: Readonly<Record<string, PublishOutcome>> = {}, rng: Rng = this.rng): Post {
    const record = this.livePost(postId);
    if (record.status !== 'draft' && record.status !== 'scheduled') {
      throw new WorldError('invalid_state', `Post ${postId} is ${record.status}; only draft or scheduled posts publish`);
    }
    for (const accountId of Object.keys(outcomes)) {
      if (!record.targets.some((t) => t.accountId === accountId)) throw new WorldError('invalid_argument', `Post ${postId} has no target ${accountId}`);
    }
    const started = this.tick();
    record.status = 'publishing';
    record.scheduledFor ??= started;
    record.updatedAt = started;
    for (const target of record.targets) target.status = 'processing';

    for (const target of record.targets) {
      const time = this.tick();
      const account = this.accounts.get(target.accountId);
      const usable = account !== undefined && !account.removed && account.isActive;
      const outcome = outcomes[target.accountId] ?? (usable ? 'published' : 'failed');
      if (outcome === 'published') {
        const { id, url } = this.platformPost(target.platform, account?.username ?? 'account');
        Object.assign(target, { status: 'published', platformPostId: id, platformPostUrl: url, publishedAt: time });
      } else {
        const failure = usable ? rng.pick(FAILURES) : AUTH_EXPIRED;
        Object.assign(target, { status: 'failed', errorMessage: failure.message, errorCategory: failure.category, errorSource: failure.source });
      }
      record.updatedAt = time;
      this.emitPlatformEvent(record, target, time, outcome);
    }

    const time = this.tick();
    const published = record.targets.filter((t) => t.status === 'published').length;
    record.status = published === record.targets.length ? 'published' : published === 0 ? 'failed' : 'partial';
    if (published > 0) record.publishedAt = time;
    record.updatedAt = time;
    this.emit(time, `post.${record.status}` as PozyEventType, { post: this.postEventBlock(record) });
    return this.restPost(record);
  }

  /** Cancels a draft or scheduled post: its pending targets become `cancelled`; `post.cancelled`. */
  cancelPost(postId: string): Post {
    const record = this.livePost(postId);
    if (record.status !== 'draft' && record.status !== 'scheduled') {
      throw new WorldError('invalid_state', `Post ${postId} is ${record.status}; only draft or scheduled posts cancel`);
    }
    const time = this.tick();
    record.status = 'cancelled';
    for (const target of record.targets) target.status = 'cancelled';
    record.updatedAt = time;
    this.emit(time, 'post.cancelled', { post: this.postEventBlock(record) });
    return this.restPost(record);
  }

  /** A content edit: Pozy sends no event for it, so only reading the post shows it. */
  editPost(postId: string, changes: { content: string }): Post {
    const record = this.livePost(postId);
    record.content = changes.content;
    record.updatedAt = this.tick();
    return this.restPost(record);
  }

  /**
   * The post was removed from one platform (Pozy finds that by polling): the target becomes `cancelled` with
   * `removedFromPlatformAt`, and `post.platform.deleted` fires. When no target is left published, the post is
   * `cancelled` ("unpublished from every platform").
   */
  deletePlatformPost(postId: string, accountId: string): Post {
    const record = this.livePost(postId);
    const target = record.targets.find((t) => t.accountId === accountId);
    if (!target) throw new WorldError('not_found', `Post ${postId} has no target ${accountId}`);
    if (target.status !== 'published') throw new WorldError('invalid_state', `Target ${accountId} of ${postId} is ${target.status}`);
    this.unpublishTarget(record, target);
    return this.restPost(record);
  }

  /**
   * Deletes the post: from then on it answers 404. Deleting a post also takes it down from the platforms, so each
   * target still published fires `post.platform.deleted` first (the receiver's cue to read the post and find it
   * gone); a post with nothing published goes silently, as Pozy has no post-deleted event.
   */
  deletePost(postId: string): void {
    const record = this.livePost(postId);
    for (const target of record.targets) if (target.status === 'published') this.unpublishTarget(record, target);
    record.deleted = true;
    record.updatedAt = this.tick();
    this.postOrder.remove(record.position);
  }

  // ---- reading ----

  getPost(postId: string): Post | undefined {
    const record = this.posts.get(postId);
    return record && !record.deleted ? this.restPost(record) : undefined;
  }

  /** Whether the post existed and was deleted (a post never created is not). */
  wasDeleted(postId: string): boolean {
    return this.posts.get(postId)?.deleted === true;
  }

  /** Every post not deleted, in creation order. */
  listPosts(): Post[] {
    return this.postOrder.toArray().map((record) => this.restPost(record));
  }

  /** How many posts are not deleted. */
  get postCount(): number {
    return this.postOrder.size;
  }

  /**
   * One page of posts matching `query`, and how many match. Unfiltered and in creation order (either way), it reads
   * only the page's posts; otherwise it filters and sorts every post, but shapes only the page's.
   */
  queryPosts(query: PostQuery): { posts: Post[]; total: number } {
    const { sortBy, offset, limit } = query;
    const filtered = [query.status, query.platform, query.profileId, query.accountId, query.createdBy, query.from, query.to, query.search].some(
      (value) => value !== undefined,
    );
    if (!filtered && (sortBy === 'created-asc' || sortBy === 'created-desc')) {
      const total = this.postOrder.size;
      const posts: Post[] = [];
      for (let i = offset; i < Math.min(total, offset + limit); i++) {
        posts.push(this.restPost(this.postOrder.at(sortBy === 'created-asc' ? i : total - 1 - i)));
      }
      return { posts, total };
    }

    // A post without scheduledFor (a draft) is placed in time by its creation.
    const when = (post: PostRecord) => post.scheduledFor ?? post.createdAt;
    const matches = (post: PostRecord) =>
      (query.status === undefined || post.status === query.status) &&
      (query.platform === undefined || post.targets.some((t) => t.platform === query.platform)) &&
      (query.profileId === undefined || post.targets.some((t) => this.accounts.get(t.accountId)?.profileId === query.profileId)) &&
      (query.accountId === undefined || post.targets.some((t) => t.accountId === query.accountId)) &&
      (query.createdBy === undefined || this.userId === query.createdBy) &&
      (query.from === undefined || when(post) >= query.from) &&
      (query.to === undefined || when(post) <= query.to) &&
      (query.search === undefined || post.content.toLowerCase().includes(query.search));
    const posts = this.postOrder.toArray().filter(matches);
    const order: Record<PostSort, (a: PostRecord, b: PostRecord) => number> = {
      'scheduled-desc': (a, b) => when(b) - when(a),
      'scheduled-asc': (a, b) => when(a) - when(b),
      'created-desc': (a, b) => b.createdAt - a.createdAt,
      'created-asc': (a, b) => a.createdAt - b.createdAt,
      status: (a, b) => a.status.localeCompare(b.status),
      platform: (a, b) => (a.targets[0]?.platform ?? '').localeCompare(b.targets[0]?.platform ?? ''),
    };
    posts.sort((a, b) => order[sortBy](a, b) || b.createdAt - a.createdAt || a.id.localeCompare(b.id));
    return { posts: posts.slice(offset, offset + limit).map((record) => this.restPost(record)), total: posts.length };
  }

  getAccount(accountId: string): Account | undefined {
    const record = this.accounts.get(accountId);
    return record && !record.removed ? this.restAccount(record) : undefined;
  }

  /** Every account not removed, in connection order. */
  listAccounts(): Account[] {
    return this.liveAccounts.map((a) => this.restAccount(a));
  }

  /** The accounts not removed matching `query`, in connection order, sliced when `limit` is given; and how many match. */
  queryAccounts(query: AccountQuery): { accounts: Account[]; total: number } {
    const candidates = query.profileId === undefined ? this.liveAccounts : (this.accountsOfProfile.get(query.profileId) ?? []);
    const matching = candidates.filter(
      (a) =>
        !a.removed &&
        (query.platform === undefined || a.platform === query.platform) &&
        (query.connected === undefined || a.isActive === query.connected),
    );
    const offset = query.offset ?? 0;
    const page = query.limit === undefined ? matching.slice(offset) : matching.slice(offset, offset + query.limit);
    return { accounts: page.map((a) => this.restAccount(a)), total: matching.length };
  }

  listProfiles(): Profile[] {
    return [...this.profiles.values()].map((p) => ({ ...p }));
  }

  /** The profile an account belongs (or belonged, if removed) to: a post's profile comes from its accounts. */
  profileOfAccount(accountId: string): string | undefined {
    return this.accounts.get(accountId)?.profileId;
  }

  /** The account's own version (time of its last mutation, ms); not something Pozy's API shows. */
  accountVersion(accountId: string): number | undefined {
    return this.accounts.get(accountId)?.updatedAt;
  }

  /** Ids of the accounts removed from their profile. */
  removedAccountIds(): string[] {
    return [...this.accounts.values()].filter((a) => a.removed).map((a) => a.id);
  }

  /** The truth, in the API's shapes. */
  snapshot(): WorldSnapshot {
    const posts = [...this.posts.values()];
    const accounts = [...this.accounts.values()];
    return {
      posts: posts.filter((p) => !p.deleted).map((p) => this.restPost(p)),
      deletedPostIds: posts.filter((p) => p.deleted).map((p) => p.id),
      accounts: accounts.filter((a) => !a.removed).map((a) => this.restAccount(a)),
      removedAccountIds: accounts.filter((a) => a.removed).map((a) => a.id),
    };
  }

  // ---- random activity ----

  /** Profiles, each with accounts on distinct platforms, and posts in a realistic mix of states. */
  seedWorld(options: { profiles?: number; accountsPerProfile?: number; posts?: number } = {}, rng: Rng = this.rng): void {
    const profiles = options.profiles ?? 2;
    const accountsPerProfile = options.accountsPerProfile ?? 3;
    for (let i = 0; i < profiles; i++) {
      const profile = this.createProfile(`Brand ${this.profiles.size + 1}`);
      for (let j = 0; j < accountsPerProfile; j++) this.connectRandomAccount(profile._id, rng);
    }
    for (let i = 0; i < (options.posts ?? 10); i++) {
      const post = this.createRandomPost(rng, rng.chance(0.8));
      if (!post) break;
      const roll = rng.next();
      if (roll < 0.5) this.publishPost(post._id, this.randomOutcomes(post, rng), rng);
      else if (roll < 0.6) this.cancelPost(post._id);
    }
  }

  /**
   * A workspace as it stood before pozy-sync was deployed, on an empty world: profiles, accounts spread over them
   * (distinct platforms within a profile while there are platforms left), some disconnected, and posts created over
   * the past year in a realistic mix: drafts, scheduled for later, published, partial, failed (with the error),
   * cancelled, some targets since removed from their platform. Nothing here happened while anyone listened, so no
   * event is emitted; every timestamp is before now (scheduledFor of scheduled posts excepted), createdAt strictly
   * increases, and the next mutation comes after all of it. Linear in posts + accounts.
   */
  seedExisting(options: ExistingWorkspace, rng: Rng = this.rng): void {
    const { posts, accounts } = options;
    const profiles = options.profiles ?? Math.ceil(accounts / 8);
    for (const [name, value] of Object.entries({ posts, accounts, profiles })) {
      if (!Number.isSafeInteger(value) || value < 0) throw new WorldError('invalid_argument', `${name} must be a non-negative integer`);
    }
    if (posts > 0 && accounts === 0) throw new WorldError('invalid_argument', 'Posts need at least one account');
    if (accounts > 0 && profiles === 0) throw new WorldError('invalid_argument', 'Accounts need at least one profile');
    if (this.profiles.size > 0 || this.posts.size > 0) {
      // Seeded posts are older than anything made since: on a world already in use, creation order would no longer be createdAt order.
      throw new WorldError('invalid_state', 'seedExisting needs an empty world');
    }
    const now = Math.max(this.clock(), this.lastTime + 1);
    const start = now - YEAR;
    /** Uniform integer in [low, high]. */
    const between = (low: number, high: number) => low + rng.int(high - low + 1);
    let latest = this.lastTime;

    const groups: AccountRecord[][] = [];
    for (let p = 0; p < profiles; p++) {
      const name = `Brand ${this.profiles.size + 1}`;
      const profile: Profile = { _id: this.rng.objectId(), name, slug: name.toLowerCase().replace(/ /g, '-') };
      this.addProfile(profile);
      const platforms = shuffled(PLATFORMS, rng);
      const count = Math.floor(accounts / profiles) + (p < accounts % profiles ? 1 : 0);
      const group: AccountRecord[] = [];
      for (let k = 0; k < count; k++) {
        const platform = platforms[k % platforms.length];
        this.accountCounter += 1;
        const username = `${profile.slug}.${platform}${this.accountCounter}`;
        const connected = rng.chance(0.92);
        const record: AccountRecord = {
          id: this.rng.objectId(),
          profileId: profile._id,
          platform,
          username,
          displayName: displayNameOf(username),
          isActive: connected,
          // Most disconnections are the platform's (a dead token); a few are the user's.
          needsReconnection: !connected && rng.chance(0.75),
          removed: false,
          updatedAt: between(start, now - 1),
        };
        latest = Math.max(latest, record.updatedAt);
        this.addAccount(record);
        group.push(record);
      }
      if (group.length > 0) groups.push(group);
    }

    const spacing = (now - 1 - start) / posts;
    let createdAt = start;
    for (let i = 0; i < posts; i++) {
      createdAt = Math.max(createdAt + 1, start + Math.floor((i + rng.next()) * spacing));
      const record = this.existingPost(createdAt, now, rng.pick(groups), rng);
      latest = Math.max(latest, record.updatedAt);
      this.addPost(record);
    }
    this.lastTime = latest;
  }

  /**
   * One realistic mutation chosen by `rng` (create, publish with random outcomes, cancel, edit, disconnect, ...).
   * With `silent: false`, only mutations Pozy announces with an event: no edits, no removed accounts, no deletion
   * of a post with nothing published (a mirror can only learn those by polling). Costs no more than O(accounts +
   * log posts), however large the world.
   */
  randomStep(rng: Rng = this.rng, options: { silent?: boolean } = {}): StepResult {
    const silent = options.silent ?? true;
    if (this.profiles.size === 0) return { action: 'createProfile', profileId: this.createProfile('Brand 1')._id };
    const live = this.liveAccounts;
    if (live.length === 0) {
      const account = this.connectRandomAccount(rng.pick(this.profileIds), rng);
      return { action: 'connectAccount', accountId: account._id };
    }
    const roll = rng.int(100);
    if (roll < 20) {
      const post = this.createRandomPost(rng, true);
      if (post) return { action: 'createScheduledPost', postId: post._id };
    } else if (roll < 26) {
      const post = this.createRandomPost(rng, false);
      if (post) return { action: 'createDraft', postId: post._id };
    } else if (roll < 50) {
      const post = this.samplePost(rng, (p) => p.status === 'scheduled' || p.status === 'draft');
      if (post) {
        const rest = this.restPost(post);
        return { action: 'publishPost', postId: this.publishPost(post.id, this.randomOutcomes(rest, rng), rng)._id };
      }
    } else if (roll < 55) {
      const post = this.samplePost(rng, (p) => p.status === 'scheduled' || p.status === 'draft');
      if (post) return { action: 'cancelPost', postId: this.cancelPost(post.id)._id };
    } else if (roll < 64) {
      const post = silent ? this.samplePost(rng, () => true) : undefined;
      if (post) return { action: 'editPost', postId: this.editPost(post.id, { content: this.randomContent(rng) })._id };
    } else if (roll < 68) {
      const post = this.samplePost(rng, (p) => p.targets.some((t) => t.status === 'published'));
      if (post) {
        const target = rng.pick(post.targets.filter((t) => t.status === 'published'));
        this.deletePlatformPost(post.id, target.accountId);
        return { action: 'deletePlatformPost', postId: post.id, accountId: target.accountId };
      }
    } else if (roll < 71) {
      const post = this.samplePost(rng, (p) => silent || p.targets.some((t) => t.status === 'published'));
      if (post) {
        this.deletePost(post.id);
        return { action: 'deletePost', postId: post.id };
      }
    } else if (roll < 78) {
      const active = live.filter((a) => a.isActive);
      // Keep most of the workspace connected, so publishing stays the common case.
      if (active.length > live.length / 2) {
        const account = rng.pick(active);
        this.disconnectAccount(account.id, { intentional: rng.chance(0.3) });
        return { action: 'disconnectAccount', accountId: account.id };
      }
    } else if (roll < 86) {
      const inactive = live.filter((a) => !a.isActive);
      if (inactive.length > 0) {
        const account = rng.pick(inactive);
        this.reconnectAccount(account.id);
        return { action: 'reconnectAccount', accountId: account.id };
      }
    } else if (roll < 90) {
      const account = this.connectRandomAccount(rng.pick(this.profileIds), rng);
      return { action: 'connectAccount', accountId: account._id };
    } else if (roll < 91) {
      if (silent && live.length > 2) {
        const account = rng.pick(live);
        this.removeAccount(account.id);
        return { action: 'removeAccount', accountId: account.id };
      }
    }
    const post = this.createRandomPost(rng, true);
    if (post) return { action: 'createScheduledPost', postId: post._id };
    const account = this.connectRandomAccount(rng.pick(this.profileIds), rng);
    return { action: 'connectAccount', accountId: account._id };
  }

  // ---- internals ----

  /** The next mutation time: the clock, but never equal to or before the previous one. */
  private tick(): number {
    this.lastTime = Math.max(this.clock(), this.lastTime + 1);
    return this.lastTime;
  }

  private emit(time: number, event: PozyEventType, blocks: Pick<PozyEvent, 'post' | 'platform' | 'account'>): void {
    // Key order is the envelope's: id, event, timestamp, then the blocks.
    const envelope: PozyEvent = { id: this.rng.uuid(), event, timestamp: iso(time), ...blocks };
    for (const listener of this.listeners) listener(envelope);
  }

  private emitPlatformEvent(record: PostRecord, target: TargetRecord, time: number, outcome: PublishOutcome | 'deleted'): void {
    const platform: WebhookPlatformBlock =
      outcome === 'published'
        ? { name: target.platform, status: 'published', platformPostId: target.platformPostId, publishedUrl: target.platformPostUrl }
        : outcome === 'failed'
          ? {
              name: target.platform,
              status: 'failed',
              error: target.errorMessage,
              errorCategory: target.errorCategory,
              errorSource: target.errorSource,
            }
          : { name: target.platform, status: 'deleted', platformPostId: target.platformPostId, deletedAt: iso(time) };
    const account = this.accounts.get(target.accountId)!;
    this.emit(time, `post.platform.${outcome}`, {
      post: this.postEventBlock(record),
      platform: compact(platform),
      account: compact({ accountId: account.id, platform: account.platform, username: account.username, displayName: account.displayName }),
    });
  }

  private unpublishTarget(record: PostRecord, target: TargetRecord): void {
    const time = this.tick();
    target.status = 'cancelled';
    target.removedFromPlatformAt = time;
    if (!record.targets.some((t) => t.status === 'published')) record.status = 'cancelled';
    record.updatedAt = time;
    this.emitPlatformEvent(record, target, time, 'deleted');
  }

  private livePost(postId: string): PostRecord {
    const record = this.posts.get(postId);
    if (!record || record.deleted) throw new WorldError('not_found', `No post ${postId}`);
    return record;
  }

  private liveAccount(accountId: string): AccountRecord {
    const record = this.accounts.get(accountId);
    if (!record || record.removed) throw new WorldError('not_found', `No account ${accountId}`);
    return record;
  }

  private restAccount(record: AccountRecord): Account {
    return {
      _id: record.id,
      platform: record.platform,
      profileId: { ...this.profiles.get(record.profileId)! },
      username: record.username,
      displayName: record.displayName,
      profileUrl: profileUrl(record.platform, record.username),
      isActive: record.isActive,
      needsReconnection: record.needsReconnection,
      enabled: true,
    };
  }

  private restPost(record: PostRecord): Post {
    return compact({
      _id: record.id,
      userId: this.userId,
      content: record.content,
      status: record.status,
      scheduledFor: record.scheduledFor === undefined ? undefined : iso(record.scheduledFor),
      timezone: 'UTC',
      publishedAt: record.publishedAt === undefined ? undefined : iso(record.publishedAt),
      platforms: record.targets.map((t) => {
        const account = this.accounts.get(t.accountId);
        return compact({
          platform: t.platform,
          accountId:
            account && !account.removed
              ? { _id: account.id, platform: account.platform, username: account.username, displayName: account.displayName, isActive: account.isActive }
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

  private postEventBlock(record: PostRecord): WebhookPostBlock {
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

  private accountEventBlock(record: AccountRecord): WebhookAccountBlock {
    return {
      accountId: record.id,
      profileId: record.profileId,
      platform: record.platform,
      username: record.username,
      displayName: record.displayName,
    };
  }

  private platformPost(platform: string, username: string): { id: string; url: string } {
    // n decimal digits, the first not 0; built nine at a time, as one string per digit made seeding slow.
    const digits = (n: number) => {
      let out = String(1 + this.rng.int(9));
      let chunk = 0;
      let length = 0;
      for (let i = 1; i < n; i++) {
        chunk = chunk * 10 + this.rng.int(10);
        length += 1;
        if (length === 9 || i === n - 1) {
          out += String(chunk).padStart(length, '0');
          chunk = 0;
          length = 0;
        }
      }
      return out;
    };
    switch (platform) {
      case 'twitter': {
        const id = digits(19);
        return { id, url: `https://x.com/${username}/status/${id}` };
      }
      case 'linkedin': {
        const id = `urn:li:share:${digits(19)}`;
        return { id, url: `https://www.linkedin.com/feed/update/${id}` };
      }
      case 'instagram': {
        const id = digits(19);
        return { id, url: `https://www.instagram.com/p/${this.rng.hex(11)}/` };
      }
      case 'facebook': {
        const id = `${digits(15)}_${digits(16)}`;
        return { id, url: `https://www.facebook.com/${id}` };
      }
      case 'tiktok': {
        const id = digits(19);
        return { id, url: `https://www.tiktok.com/@${username}/video/${id}` };
      }
      default: {
        const id = this.rng.hex(16);
        return { id, url: `https://${platform}.example/${username}/posts/${id}` };
      }
    }
  }

  private addProfile(profile: Profile): void {
    this.profiles.set(profile._id, profile);
    this.profileIds.push(profile._id);
    this.accountsOfProfile.set(profile._id, []);
  }

  private addAccount(record: AccountRecord): void {
    this.accounts.set(record.id, record);
    this.liveAccounts.push(record);
    this.accountsOfProfile.get(record.profileId)!.push(record);
    this.postGroups = undefined;
  }

  private addPost(record: PostRecord): void {
    this.posts.set(record.id, record);
    record.position = this.postOrder.push(record);
  }

  private connectRandomAccount(profileId: string, rng: Rng): Account {
    const taken = new Set(this.accountsOfProfile.get(profileId)!.filter((a) => !a.removed).map((a) => a.platform));
    const free = PLATFORMS.filter((p) => !taken.has(p));
    const platform = rng.pick(free.length > 0 ? free : PLATFORMS);
    this.accountCounter += 1;
    const profile = this.profiles.get(profileId)!;
    return this.connectAccount(profileId, platform, `${profile.slug}.${platform}${this.accountCounter}`);
  }

  /** A post on 1–3 accounts of one profile; undefined when no profile has an account. */
  private createRandomPost(rng: Rng, scheduled: boolean): Post | undefined {
    const groups = (this.postGroups ??= this.groupLiveAccounts());
    if (groups.length === 0) return undefined;
    const accounts = [...rng.pick(groups)];
    const chosen: string[] = [];
    const count = 1 + rng.int(Math.min(3, accounts.length));
    while (chosen.length < count) chosen.push(accounts.splice(rng.int(accounts.length), 1)[0].id);
    return this.createPost({
      content: this.randomContent(rng),
      accountIds: chosen,
      scheduledFor: scheduled ? this.lastTime + HOUR * (1 + rng.int(72)) : undefined,
    });
  }

  /**
   * A post created at `createdAt` on 1–3 accounts of `group`, in the state months of activity would have left it
   * by `now`, all its times before `now`. Recent posts are mostly still ahead of their time.
   */
  private existingPost(createdAt: number, now: number, group: readonly AccountRecord[], rng: Rng): PostRecord {
    const between = (low: number, high: number) => low + rng.int(high - low + 1);
    const pool = [...group];
    const chosen: AccountRecord[] = [];
    const count = 1 + rng.int(Math.min(3, pool.length));
    while (chosen.length < count) chosen.push(pool.splice(rng.int(pool.length), 1)[0]);
    const record: PostRecord = {
      id: this.rng.objectId(),
      position: 0,
      content: this.randomContent(rng),
      status: 'draft',
      targets: chosen.map((a): TargetRecord => ({ accountId: a.id, platform: a.platform, status: 'pending' })),
      createdAt,
      updatedAt: createdAt,
      deleted: false,
    };
    const age = now - createdAt;
    const shares = age < HOUR ? EXISTING_MIX.lastHour : age < 14 * DAY ? EXISTING_MIX.lastTwoWeeks : EXISTING_MIX.older;
    const roll = rng.next();
    const kind = EXISTING_KINDS.find((_, i) => roll < shares[i]) ?? 'published';

    if (kind === 'draft' || kind === 'scheduled') {
      if (kind === 'scheduled') {
        record.status = 'scheduled';
        record.scheduledFor = now + between(HOUR, 60 * DAY);
      }
      if (rng.chance(0.3)) record.updatedAt = between(createdAt, now - 1);
      return record;
    }
    if (kind === 'cancelled') {
      record.status = 'cancelled';
      record.updatedAt = between(createdAt, now - 1);
      if (rng.chance(0.5)) record.scheduledFor = record.updatedAt + between(HOUR, 30 * DAY);
      for (const target of record.targets) target.status = 'cancelled';
      return record;
    }

    // Published at its scheduled time: each target a few seconds apart, then the rollup; well before now (age ≥ 1 h).
    let time = createdAt + 1 + rng.int(Math.min(Math.floor(age / 2), 14 * DAY));
    record.scheduledFor = time;
    const mustFail = kind === 'failed' ? -1 : kind === 'partial' && count > 1 ? rng.int(count) : count;
    record.targets = chosen.map((account, index): TargetRecord => {
      time += between(1, 3_000);
      const published = kind !== 'failed' && index !== mustFail && (kind === 'published' || index === (mustFail + 1) % count || rng.chance(0.85));
      if (published) {
        const { id, url } = this.platformPost(account.platform, account.username);
        return { accountId: account.id, platform: account.platform, status: 'published', platformPostId: id, platformPostUrl: url, publishedAt: time };
      }
      const failure = account.isActive ? rng.pick(FAILURES) : AUTH_EXPIRED;
      return {
        accountId: account.id,
        platform: account.platform,
        status: 'failed',
        errorMessage: failure.message,
        errorCategory: failure.category,
        errorSource: failure.source,
      };
    });
    time += between(1, 3_000);
    const published = record.targets.filter((t) => t.status === 'published');
    record.status = published.length === record.targets.length ? 'published' : published.length === 0 ? 'failed' : 'partial';
    if (published.length > 0) record.publishedAt = time;
    record.updatedAt = time;

    if (published.length > 0 && rng.chance(0.08)) {
      // Taken down from one platform since; with nothing left published, the post counts as cancelled.
      const target = rng.pick(published);
      target.status = 'cancelled';
      target.removedFromPlatformAt = between(time + 1, now - 1);
      if (published.length === 1) record.status = 'cancelled';
      record.updatedAt = target.removedFromPlatformAt;
    }
    return record;
  }

  /** Live accounts by profile, profiles in the order of their first live account. */
  private groupLiveAccounts(): AccountRecord[][] {
    const byProfile = new Map<string, AccountRecord[]>();
    for (const account of this.liveAccounts) {
      const group = byProfile.get(account.profileId);
      if (group) group.push(account);
      else byProfile.set(account.profileId, [account]);
    }
    return [...byProfile.values()];
  }

  private randomContent(rng: Rng): string {
    const count = 3 + rng.int(6);
    let text = rng.pick(WORDS);
    for (let i = 1; i < count; i++) text += ` ${rng.pick(WORDS)}`;
    return `${text[0].toUpperCase()}${text.slice(1)} #${rng.int(1000)}`;
  }

  private randomOutcomes(post: Post, rng: Rng): Record<string, PublishOutcome> {
    const outcomes: Record<string, PublishOutcome> = {};
    for (const target of post.platforms) {
      const accountId = typeof target.accountId === 'string' ? target.accountId : target.accountId._id;
      const account = this.accounts.get(accountId);
      const usable = account !== undefined && !account.removed && account.isActive;
      outcomes[accountId] = usable && rng.chance(0.85) ? 'published' : 'failed';
    }
    return outcomes;
  }

  /** A random live post matching `accept`, from a few draws (cheap on large worlds; may miss a rare match). */
  private samplePost(rng: Rng, accept: (post: PostRecord) => boolean): PostRecord | undefined {
    if (this.postOrder.size === 0) return undefined;
    for (let i = 0; i < 24; i++) {
      const record = this.postOrder.at(rng.int(this.postOrder.size));
      if (accept(record)) return record;
    }
    return undefined;
  }
}

function displayNameOf(username: string): string {
  return username.replace(/[._-]+/g, ' ').replace(/\b\w/g, (c) => c.toUpperCase());
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

function shuffled<T>(items: readonly T[], rng: Rng): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}
