/**
 * The world's state, which its parts (accounts.ts, posts.ts, existing-workspace.ts, random-activity.ts) share: the
 * records behind Pozy's shapes and the indexes over them, the clock, the seeded Rng that makes every id, and the
 * listeners every event goes to.
 */
import { Rng } from '../faults';
import { iso, WorldClock } from './clock';
import { CreationOrder } from './creation-order';
import type {
  ErrorCategory,
  ErrorSource,
  MediaItem,
  PlatformError,
  PostDetails,
  PostStatus,
  PozyEvent,
  PozyEventType,
  Profile,
  TargetStatus,
} from './pozy-shapes';

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
  /** The unknown-field switch (default off): see `PozyWorld.setUnknownFields`. */
  unknownFields?: boolean;
}

export interface AccountRecord {
  id: string;
  profileId: string;
  platform: string;
  username: string;
  displayName: string;
  /** null: no picture. */
  profilePicture: string | null;
  isActive: boolean;
  needsReconnection: boolean;
  /** Pozy's `enabled`. */
  enabled: boolean;
  removed: boolean;
  parentAccountId?: string;
  metadata?: Record<string, unknown>;
  followersCount?: number;
  followersLastUpdated?: number;
  /** The account's own version: the time of its last mutation (not part of Pozy's SocialAccount). */
  updatedAt: number;
}

export interface TargetRecord {
  accountId: string;
  platform: string;
  status: TargetStatus;
  platformPostId?: string;
  platformPostUrl?: string;
  publishedAt?: number;
  errorMessage?: string;
  errorCategory?: ErrorCategory;
  errorSource?: ErrorSource;
  platformError?: PlatformError;
  customContent?: string;
  customMedia?: MediaItem[];
  removedFromPlatformAt?: number;
}

export interface PostRecord {
  id: string;
  /** In `postOrder`. */
  position: number;
  content: string;
  /** Title, media, tags, metadata, timezone, queue fields: only those the post has (often shared, never mutated: replaced). */
  details: PostDetails;
  status: PostStatus;
  scheduledFor?: number;
  publishedAt?: number;
  targets: TargetRecord[];
  createdAt: number;
  updatedAt: number;
  deleted: boolean;
}

export class WorldState {
  /** The workspace owner; Pozy's `userId` on posts and webhook logs. */
  readonly userId: string;
  readonly rng: Rng;
  readonly clock: WorldClock;
  readonly listeners = new Set<(event: PozyEvent) => void>();
  readonly profiles = new Map<string, Profile>();
  readonly profileIds: string[] = [];
  /** Every account, removed ones included, in connection order. */
  readonly accounts = new Map<string, AccountRecord>();
  /** Accounts not removed, in connection order. */
  readonly liveAccounts: AccountRecord[] = [];
  /** Per profile, its accounts (removed ones included) in connection order. */
  readonly accountsOfProfile = new Map<string, AccountRecord[]>();
  /** Live accounts grouped by profile, for random posts; rebuilt after an account is connected or removed. */
  postGroups: AccountRecord[][] | undefined;
  readonly posts = new Map<string, PostRecord>();
  /** Posts not deleted, in creation order. */
  readonly postOrder = new CreationOrder<PostRecord>();
  accountCounter = 0;
  /** Per profile, the id of its posting queue (made when a post is first queued there). */
  readonly queueIds = new Map<string, string>();
  /** The unknown-field switch: while on, the REST shapes carry fields pozy-sync has never seen. */
  unknownFields: boolean;

  constructor(options: WorldOptions) {
    this.rng = new Rng(options.seed ?? 1);
    this.clock = new WorldClock(options.clock ?? Date.now);
    this.unknownFields = options.unknownFields ?? false;
    this.userId = this.rng.objectId();
  }

  emit(time: number, event: PozyEventType, blocks: Pick<PozyEvent, 'post' | 'platform' | 'account'>): void {
    // Key order is the envelope's: id, event, timestamp, then the blocks.
    const envelope: PozyEvent = { id: this.rng.uuid(), event, timestamp: iso(time), ...blocks };
    for (const listener of this.listeners) listener(envelope);
  }

  addProfile(profile: Profile): void {
    this.profiles.set(profile._id, profile);
    this.profileIds.push(profile._id);
    this.accountsOfProfile.set(profile._id, []);
  }

  addAccount(record: AccountRecord): void {
    this.accounts.set(record.id, record);
    this.liveAccounts.push(record);
    this.accountsOfProfile.get(record.profileId)!.push(record);
    this.postGroups = undefined;
  }

  addPost(record: PostRecord): void {
    this.posts.set(record.id, record);
    record.position = this.postOrder.push(record);
  }

  livePost(postId: string): PostRecord {
    const record = this.posts.get(postId);
    if (!record || record.deleted) throw new WorldError('not_found', `No post ${postId}`);
    return record;
  }

  liveAccount(accountId: string): AccountRecord {
    const record = this.accounts.get(accountId);
    if (!record || record.removed) throw new WorldError('not_found', `No account ${accountId}`);
    return record;
  }
}
