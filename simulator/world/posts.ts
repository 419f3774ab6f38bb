/** Posts: creating, publishing target by target, cancelling, editing, taking down, deleting, and reading them. */
import type { Rng } from '../faults';
import { iso } from './clock';
import { AUTH_EXPIRED, failureFields, FAILURES, isMetaPlatform, platformPost } from './platform-results';
import {
  ERROR_CATEGORIES,
  ERROR_SOURCES,
  ErrorCategory,
  ErrorSource,
  MEDIA_TYPES,
  MediaItem,
  PlatformError,
  Post,
  PostDetails,
  PostSort,
  PostStatus,
  PozyEventType,
  Recycling,
  VISIBILITIES,
  WebhookPlatformBlock,
} from './pozy-shapes';
import { PostRecord, TargetRecord, WorldError, WorldState } from './state';
import { compact, copyJson, copyMedia, postEventBlock, restPost } from './views';

export type PublishOutcome = 'published' | 'failed';

/** `createPost`'s input: content, accounts, an optional schedule, and any of the post's details. */
export type CreatePostInput = { content: string; accountIds: readonly string[]; scheduledFor?: string | number | Date } & PostDetails;

/** `editPost`'s changes: only the fields given change. */
export type PostChanges = { content?: string } & PostDetails;

/** `editTarget`'s changes to one target: only the fields given change. */
export interface TargetChanges {
  errorMessage?: string;
  errorCategory?: ErrorCategory;
  errorSource?: ErrorSource;
  /** Meta platforms only (facebook, instagram, threads). */
  platformError?: PlatformError;
  customContent?: string;
  customMedia?: MediaItem[];
}

const DETAIL_KEYS = [
  'title',
  'mediaItems',
  'tags',
  'hashtags',
  'mentions',
  'visibility',
  'metadata',
  'timezone',
  'recycling',
  'recycledFromPostId',
  'queuedFromProfile',
  'queueId',
] as const satisfies readonly (keyof PostDetails)[];

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

export class Posts {
  constructor(private readonly state: WorldState) {}

  /** With `scheduledFor`: `scheduled` and `post.scheduled`; without: a `draft`, and no event. */
  createPost(input: CreatePostInput): Post {
    if (typeof input.content !== 'string') throw new WorldError('invalid_argument', 'content must be a string');
    const details = checkedDetails(input);
    if (input.accountIds.length === 0) throw new WorldError('invalid_argument', 'A post needs at least one account');
    if (new Set(input.accountIds).size !== input.accountIds.length) throw new WorldError('invalid_argument', 'Duplicate account');
    const targets = input.accountIds.map((accountId): TargetRecord => {
      const account = this.state.liveAccount(accountId);
      return { accountId, platform: account.platform, status: 'pending' };
    });
    let scheduledFor: number | undefined;
    if (input.scheduledFor !== undefined) {
      scheduledFor = new Date(input.scheduledFor).getTime();
      if (Number.isNaN(scheduledFor)) throw new WorldError('invalid_argument', 'scheduledFor is not a date');
    }
    const time = this.state.clock.tick();
    const record: PostRecord = {
      id: this.state.rng.objectId(),
      position: 0,
      content: input.content,
      details,
      status: scheduledFor === undefined ? 'draft' : 'scheduled',
      scheduledFor,
      targets,
      createdAt: time,
      updatedAt: time,
      deleted: false,
    };
    this.state.addPost(record);
    if (record.status === 'scheduled') this.state.emit(time, 'post.scheduled', { post: postEventBlock(record) });
    return restPost(this.state, record);
  }

  /**
   * Publishes a draft or scheduled post, one target after the other: each ends `published` or `failed` (by
   * default: published, unless its account is disconnected or removed) and fires `post.platform.*` while the post
   * is still `publishing`; then the rollup `post.published` / `post.partial` / `post.failed`.
   * A draft gets `scheduledFor` = the moment publishing started (publish now).
   */
  publishPost(postId: string, outcomes: Readonly<Record<string, PublishOutcome>> = {}, rng: Rng = this.state.rng): Post {
    const record = this.state.livePost(postId);
    if (record.status !== 'draft' && record.status !== 'scheduled') {
      throw new WorldError('invalid_state', `Post ${postId} is ${record.status}; only draft or scheduled posts publish`);
    }
    for (const accountId of Object.keys(outcomes)) {
      if (!record.targets.some((t) => t.accountId === accountId))
        throw new WorldError('invalid_argument', `Post ${postId} has no target ${accountId}`);
    }
    const started = this.state.clock.tick();
    record.status = 'publishing';
    record.scheduledFor ??= started;
    record.updatedAt = started;
    for (const target of record.targets) target.status = 'processing';

    for (const target of record.targets) {
      const time = this.state.clock.tick();
      const account = this.state.accounts.get(target.accountId);
      const usable = account !== undefined && !account.removed && account.isActive;
      const outcome = outcomes[target.accountId] ?? (usable ? 'published' : 'failed');
      if (outcome === 'published') {
        const { id, url } = platformPost(this.state.rng, target.platform, account?.username ?? 'account');
        Object.assign(target, { status: 'published', platformPostId: id, platformPostUrl: url, publishedAt: time });
      } else {
        const failure = usable ? rng.pick(FAILURES) : AUTH_EXPIRED;
        Object.assign(target, { status: 'failed', ...failureFields(target.platform, failure) });
      }
      record.updatedAt = time;
      this.emitPlatformEvent(record, target, time, outcome);
    }

    const time = this.state.clock.tick();
    const published = record.targets.filter((t) => t.status === 'published').length;
    record.status = published === record.targets.length ? 'published' : published === 0 ? 'failed' : 'partial';
    if (published > 0) record.publishedAt = time;
    record.updatedAt = time;
    this.state.emit(time, `post.${record.status}` as PozyEventType, { post: postEventBlock(record) });
    return restPost(this.state, record);
  }

  /** Cancels a draft or scheduled post: its pending targets become `cancelled`; `post.cancelled`. */
  cancelPost(postId: string): Post {
    const record = this.state.livePost(postId);
    if (record.status !== 'draft' && record.status !== 'scheduled') {
      throw new WorldError('invalid_state', `Post ${postId} is ${record.status}; only draft or scheduled posts cancel`);
    }
    const time = this.state.clock.tick();
    record.status = 'cancelled';
    for (const target of record.targets) target.status = 'cancelled';
    record.updatedAt = time;
    this.state.emit(time, 'post.cancelled', { post: postEventBlock(record) });
    return restPost(this.state, record);
  }

  /**
   * An edit of the content or details: only the fields given (not undefined) change. Pozy sends no event for it,
   * so only reading the post shows it.
   */
  editPost(postId: string, changes: PostChanges): Post {
    const record = this.state.livePost(postId);
    if (changes.content !== undefined && typeof changes.content !== 'string') throw new WorldError('invalid_argument', 'content must be a string');
    const details = checkedDetails(changes);
    if (changes.content !== undefined) record.content = changes.content;
    // Replaced, not changed in place: a record's details may be shared.
    if (Object.keys(details).length > 0) record.details = { ...record.details, ...details };
    record.updatedAt = this.state.clock.tick();
    return restPost(this.state, record);
  }

  /**
   * Changes one target's error fields, custom content or custom media: only the fields given (not undefined).
   * Bumps the post's updatedAt; no event. `platformError` only on a Meta platform (facebook, instagram, threads).
   */
  editTarget(postId: string, accountId: string, changes: TargetChanges): Post {
    const record = this.state.livePost(postId);
    const target = record.targets.find((t) => t.accountId === accountId);
    if (!target) throw new WorldError('not_found', `Post ${postId} has no target ${accountId}`);
    const { errorMessage, errorCategory, errorSource, platformError, customContent, customMedia } = changes;
    if (errorMessage !== undefined && typeof errorMessage !== 'string') throw new WorldError('invalid_argument', 'errorMessage must be a string');
    if (errorCategory !== undefined && !(ERROR_CATEGORIES as readonly unknown[]).includes(errorCategory)) {
      throw new WorldError('invalid_argument', `errorCategory must be one of: ${ERROR_CATEGORIES.join(', ')}`);
    }
    if (errorSource !== undefined && !(ERROR_SOURCES as readonly unknown[]).includes(errorSource)) {
      throw new WorldError('invalid_argument', `errorSource must be one of: ${ERROR_SOURCES.join(', ')}`);
    }
    if (platformError !== undefined) {
      if (!isMetaPlatform(target.platform))
        throw new WorldError('invalid_argument', `platformError is for Meta platforms only, not ${target.platform}`);
      if (!isObject(platformError) || typeof platformError.message !== 'string') {
        throw new WorldError('invalid_argument', 'platformError must be {code?, subcode?, message}');
      }
      for (const key of ['code', 'subcode'] as const) {
        if (platformError[key] !== undefined && !Number.isInteger(platformError[key]))
          throw new WorldError('invalid_argument', `platformError.${key} must be an integer`);
      }
    }
    if (customContent !== undefined && typeof customContent !== 'string') throw new WorldError('invalid_argument', 'customContent must be a string');
    if (customMedia !== undefined) checkMedia(customMedia, 'customMedia');

    if (errorMessage !== undefined) target.errorMessage = errorMessage;
    if (errorCategory !== undefined) target.errorCategory = errorCategory;
    if (errorSource !== undefined) target.errorSource = errorSource;
    if (platformError !== undefined)
      target.platformError = compact({ code: platformError.code, subcode: platformError.subcode, message: platformError.message });
    if (customContent !== undefined) target.customContent = customContent;
    if (customMedia !== undefined) target.customMedia = copyMedia(customMedia);
    record.updatedAt = this.state.clock.tick();
    return restPost(this.state, record);
  }

  /**
   * The post was removed from one platform (Pozy finds that by polling): the target becomes `cancelled` with
   * `removedFromPlatformAt`, and `post.platform.deleted` fires. When no target is left published, the post is
   * `cancelled` ("unpublished from every platform").
   */
  deletePlatformPost(postId: string, accountId: string): Post {
    const record = this.state.livePost(postId);
    const target = record.targets.find((t) => t.accountId === accountId);
    if (!target) throw new WorldError('not_found', `Post ${postId} has no target ${accountId}`);
    if (target.status !== 'published') throw new WorldError('invalid_state', `Target ${accountId} of ${postId} is ${target.status}`);
    this.unpublishTarget(record, target);
    return restPost(this.state, record);
  }

  /**
   * Deletes the post: from then on it answers 404. Deleting a post also takes it down from the platforms, so each
   * target still published fires `post.platform.deleted` first (the receiver's cue to read the post and find it
   * gone); a post with nothing published goes silently, as Pozy has no post-deleted event.
   */
  deletePost(postId: string): void {
    const record = this.state.livePost(postId);
    for (const target of record.targets) if (target.status === 'published') this.unpublishTarget(record, target);
    record.deleted = true;
    record.updatedAt = this.state.clock.tick();
    this.state.postOrder.remove(record.position);
  }

  getPost(postId: string): Post | undefined {
    const record = this.state.posts.get(postId);
    return record && !record.deleted ? restPost(this.state, record) : undefined;
  }

  /** Whether the post existed and was deleted (a post never created is not). */
  wasDeleted(postId: string): boolean {
    return this.state.posts.get(postId)?.deleted === true;
  }

  /** Every post not deleted, in creation order. */
  listPosts(): Post[] {
    return this.state.postOrder.toArray().map((record) => restPost(this.state, record));
  }

  /** How many posts are not deleted. */
  get postCount(): number {
    return this.state.postOrder.size;
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
      const total = this.state.postOrder.size;
      const posts: Post[] = [];
      for (let i = offset; i < Math.min(total, offset + limit); i++) {
        posts.push(restPost(this.state, this.state.postOrder.at(sortBy === 'created-asc' ? i : total - 1 - i)));
      }
      return { posts, total };
    }

    // A post without scheduledFor (a draft) is placed in time by its creation.
    const when = (post: PostRecord) => post.scheduledFor ?? post.createdAt;
    const matches = (post: PostRecord) =>
      (query.status === undefined || post.status === query.status) &&
      (query.platform === undefined || post.targets.some((t) => t.platform === query.platform)) &&
      (query.profileId === undefined || post.targets.some((t) => this.state.accounts.get(t.accountId)?.profileId === query.profileId)) &&
      (query.accountId === undefined || post.targets.some((t) => t.accountId === query.accountId)) &&
      (query.createdBy === undefined || this.state.userId === query.createdBy) &&
      (query.from === undefined || when(post) >= query.from) &&
      (query.to === undefined || when(post) <= query.to) &&
      (query.search === undefined || post.content.toLowerCase().includes(query.search));
    const posts = this.state.postOrder.toArray().filter(matches);
    const order: Record<PostSort, (a: PostRecord, b: PostRecord) => number> = {
      'scheduled-desc': (a, b) => when(b) - when(a),
      'scheduled-asc': (a, b) => when(a) - when(b),
      'created-desc': (a, b) => b.createdAt - a.createdAt,
      'created-asc': (a, b) => a.createdAt - b.createdAt,
      status: (a, b) => a.status.localeCompare(b.status),
      platform: (a, b) => (a.targets[0]?.platform ?? '').localeCompare(b.targets[0]?.platform ?? ''),
    };
    posts.sort((a, b) => order[sortBy](a, b) || b.createdAt - a.createdAt || a.id.localeCompare(b.id));
    return { posts: posts.slice(offset, offset + limit).map((record) => restPost(this.state, record)), total: posts.length };
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
    const account = this.state.accounts.get(target.accountId)!;
    this.state.emit(time, `post.platform.${outcome}`, {
      post: postEventBlock(record),
      platform: compact(platform),
      account: compact({ accountId: account.id, platform: account.platform, username: account.username, displayName: account.displayName }),
    });
  }

  private unpublishTarget(record: PostRecord, target: TargetRecord): void {
    const time = this.state.clock.tick();
    target.status = 'cancelled';
    target.removedFromPlatformAt = time;
    if (!record.targets.some((t) => t.status === 'published')) record.status = 'cancelled';
    record.updatedAt = time;
    this.emitPlatformEvent(record, target, time, 'deleted');
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function checkMedia(items: unknown, name: string): void {
  if (!Array.isArray(items)) throw new WorldError('invalid_argument', `${name} must be an array`);
  for (const item of items) {
    if (!isObject(item) || !(MEDIA_TYPES as readonly unknown[]).includes(item.type) || typeof item.url !== 'string') {
      throw new WorldError('invalid_argument', `${name}: each item is {type: ${MEDIA_TYPES.join('|')}, url, altText?, thumbnail?}`);
    }
    for (const key of ['altText', 'thumbnail'] as const) {
      if (item[key] !== undefined && typeof item[key] !== 'string') throw new WorldError('invalid_argument', `${name}: ${key} must be a string`);
    }
  }
}

function checkStrings(items: unknown, name: string): void {
  if (!Array.isArray(items) || items.some((item) => typeof item !== 'string'))
    throw new WorldError('invalid_argument', `${name} must be an array of strings`);
}

function validTimeZone(name: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

/** The details given in `input` (those not undefined), checked, and copied so the caller keeps no handle on them. */
function checkedDetails(input: PostDetails): PostDetails {
  const out: PostDetails = {};
  for (const key of DETAIL_KEYS) {
    const value = input[key];
    if (value === undefined) continue;
    switch (key) {
      case 'mediaItems':
        checkMedia(value, key);
        out.mediaItems = copyMedia(input.mediaItems);
        break;
      case 'tags':
      case 'hashtags':
      case 'mentions':
        checkStrings(value, key);
        out[key] = [...(value as string[])];
        break;
      case 'visibility':
        if (!(VISIBILITIES as readonly unknown[]).includes(value))
          throw new WorldError('invalid_argument', `visibility must be one of: ${VISIBILITIES.join(', ')}`);
        out.visibility = input.visibility;
        break;
      case 'metadata':
        if (!isObject(value)) throw new WorldError('invalid_argument', 'metadata must be an object');
        out.metadata = copyJson(input.metadata);
        break;
      case 'recycling':
        if (!isObject(value) || typeof value.enabled !== 'boolean')
          throw new WorldError('invalid_argument', 'recycling must be an object with enabled: boolean');
        out.recycling = copyJson(value as Recycling);
        break;
      case 'timezone':
        if (typeof value !== 'string' || !validTimeZone(value)) throw new WorldError('invalid_argument', 'timezone must be an IANA time zone name');
        out.timezone = value;
        break;
      default:
        if (typeof value !== 'string') throw new WorldError('invalid_argument', `${key} must be a string`);
        out[key] = value;
    }
  }
  return out;
}
