/** Posts: creating, publishing target by target, cancelling, editing, taking down, deleting, and reading them. */
import type { Rng } from '../faults';
import { iso } from './clock';
import { AUTH_EXPIRED, FAILURES, platformPost } from './platform-results';
import type { Post, PostSort, PostStatus, PozyEventType, WebhookPlatformBlock } from './pozy-shapes';
import { PostRecord, TargetRecord, WorldError, WorldState } from './state';
import { compact, postEventBlock, restPost } from './views';

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

export class Posts {
  constructor(private readonly state: WorldState) {}

  /** With `scheduledFor`: `scheduled` and `post.scheduled`; without: a `draft`, and no event. */
  createPost(input: { content: string; accountIds: readonly string[]; scheduledFor?: string | number | Date }): Post {
    if (typeof input.content !== 'string') throw new WorldError('invalid_argument', 'content must be a string');
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
        Object.assign(target, { status: 'failed', errorMessage: failure.message, errorCategory: failure.category, errorSource: failure.source });
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

  /** A content edit: Pozy sends no event for it, so only reading the post shows it. */
  editPost(postId: string, changes: { content: string }): Post {
    const record = this.state.livePost(postId);
    record.content = changes.content;
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
