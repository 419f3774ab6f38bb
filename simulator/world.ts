/**
 * The simulated Pozy workspace: profiles, social accounts and posts, held in memory. Every mutation happens at a
 * strictly later millisecond than the one before, changes the state and then emits the webhook events Pozy would
 * (the `post.*` and `account.*` envelopes of world/pozy-shapes.ts) to the listeners; the simulator hands those to
 * its webhook sender. Ids, event ids and every random choice come from the seeded Rng, so a seed (and a fixed
 * clock) replays exactly. Posts are kept in creation order, which is also createdAt order:
 * `GET /v1/posts?sortBy=created-asc` pages by position in it.
 *
 * PozyWorld is the one entry point. Its parts, in world/: state.ts (the records, their indexes, ids and events) and
 * clock.ts; accounts.ts and posts.ts (their mutations and reads); views.ts (the records in Pozy's shapes);
 * platform-results.ts (what a publish yields); existing-workspace.ts and random-activity.ts, whose posts'
 * content and details come from random-content.ts.
 */
import type { Rng } from './faults';
import { AccountChanges, AccountQuery, Accounts } from './world/accounts';
import { ExistingWorkspace, seedExisting } from './world/existing-workspace';
import type { Account, PozyEvent, Post, Profile } from './world/pozy-shapes';
import { CreatePostInput, PostChanges, PostQuery, Posts, PublishOutcome, TargetChanges } from './world/posts';
import { RandomActivity, StepResult } from './world/random-activity';
import { WorldOptions, WorldState } from './world/state';
import { restAccount, restPost } from './world/views';

export interface WorldSnapshot {
  posts: Post[];
  deletedPostIds: string[];
  accounts: Account[];
  removedAccountIds: string[];
}

export class PozyWorld {
  /** The workspace owner; Pozy's `userId` on posts and webhook logs. */
  readonly userId: string;
  private readonly state: WorldState;
  private readonly accounts: Accounts;
  private readonly posts: Posts;
  private readonly activity: RandomActivity;

  constructor(options: WorldOptions = {}) {
    this.state = new WorldState(options);
    this.userId = this.state.userId;
    this.accounts = new Accounts(this.state);
    this.posts = new Posts(this.state);
    this.activity = new RandomActivity(this.state, this.accounts, this.posts);
  }

  /** Calls `listener` with every event, in the order they happen. Returns the unsubscribe function. */
  onEvent(listener: (event: PozyEvent) => void): () => void {
    this.state.listeners.add(listener);
    return () => this.state.listeners.delete(listener);
  }

  /**
   * The unknown-field switch: while on, every REST post carries `pozyLabsInsights`, every target `pozyLabsReach`
   * and every account `pozyLabsVerified` (world/pozy-shapes.ts's UNKNOWN_*_FIELD), fields pozy-sync has never seen.
   * Not a mutation: no tick, no event, no updatedAt.
   */
  setUnknownFields(on: boolean): void {
    this.state.unknownFields = on;
  }

  get unknownFields(): boolean {
    return this.state.unknownFields;
  }

  /** When the account last changed, its connection included (the world's clock, ms); undefined: no such account. */
  accountChangedAt(accountId: string): number | undefined {
    return this.state.accounts.get(accountId)?.updatedAt;
  }

  /** The time of the latest mutation (ms). */
  get time(): number {
    return this.state.clock.time;
  }

  // ---- profiles and accounts (world/accounts.ts) ----

  createProfile(name: string): Profile {
    return this.accounts.createProfile(name);
  }

  connectAccount(profileId: string, platform: string, username: string, displayName?: string): Account {
    return this.accounts.connectAccount(profileId, platform, username, displayName);
  }

  disconnectAccount(accountId: string, options?: { intentional?: boolean; reason?: string }): Account {
    return this.accounts.disconnectAccount(accountId, options);
  }

  reconnectAccount(accountId: string): Account {
    return this.accounts.reconnectAccount(accountId);
  }

  /** Name, picture, enabled, metadata, followers (with followersLastUpdated): only the fields given; no event. */
  updateAccount(accountId: string, changes: AccountChanges): Account {
    return this.accounts.updateAccount(accountId, changes);
  }

  removeAccount(accountId: string): void {
    this.accounts.removeAccount(accountId);
  }

  getAccount(accountId: string): Account | undefined {
    return this.accounts.getAccount(accountId);
  }

  listAccounts(): Account[] {
    return this.accounts.listAccounts();
  }

  queryAccounts(query: AccountQuery): { accounts: Account[]; total: number } {
    return this.accounts.queryAccounts(query);
  }

  listProfiles(): Profile[] {
    return this.accounts.listProfiles();
  }

  profileOfAccount(accountId: string): string | undefined {
    return this.accounts.profileOfAccount(accountId);
  }

  accountVersion(accountId: string): number | undefined {
    return this.accounts.accountVersion(accountId);
  }

  removedAccountIds(): string[] {
    return this.accounts.removedAccountIds();
  }

  // ---- posts (world/posts.ts) ----

  /** With `scheduledFor`: scheduled (and `post.scheduled`); without: a draft. Any of PostDetails may come along. */
  createPost(input: CreatePostInput): Post {
    return this.posts.createPost(input);
  }

  publishPost(postId: string, outcomes?: Readonly<Record<string, PublishOutcome>>, rng?: Rng): Post {
    return this.posts.publishPost(postId, outcomes, rng);
  }

  cancelPost(postId: string): Post {
    return this.posts.cancelPost(postId);
  }

  /** Changes only the fields given (content and any of PostDetails), bumps updatedAt; no event. */
  editPost(postId: string, changes: PostChanges): Post {
    return this.posts.editPost(postId, changes);
  }

  /** Changes only the given fields of the post's target on `accountId`, bumps the post's updatedAt; no event. */
  editTarget(postId: string, accountId: string, changes: TargetChanges): Post {
    return this.posts.editTarget(postId, accountId, changes);
  }

  deletePlatformPost(postId: string, accountId: string): Post {
    return this.posts.deletePlatformPost(postId, accountId);
  }

  deletePost(postId: string): void {
    this.posts.deletePost(postId);
  }

  getPost(postId: string): Post | undefined {
    return this.posts.getPost(postId);
  }

  wasDeleted(postId: string): boolean {
    return this.posts.wasDeleted(postId);
  }

  listPosts(): Post[] {
    return this.posts.listPosts();
  }

  get postCount(): number {
    return this.posts.postCount;
  }

  queryPosts(query: PostQuery): { posts: Post[]; total: number } {
    return this.posts.queryPosts(query);
  }

  /** The truth, in the API's shapes. */
  snapshot(): WorldSnapshot {
    const posts = [...this.state.posts.values()];
    const accounts = [...this.state.accounts.values()];
    return {
      posts: posts.filter((p) => !p.deleted).map((p) => restPost(this.state, p)),
      deletedPostIds: posts.filter((p) => p.deleted).map((p) => p.id),
      accounts: accounts.filter((a) => !a.removed).map((a) => restAccount(this.state, a)),
      removedAccountIds: accounts.filter((a) => a.removed).map((a) => a.id),
    };
  }

  // ---- history and random activity (world/existing-workspace.ts, world/random-activity.ts) ----

  seedWorld(options?: { profiles?: number; accountsPerProfile?: number; posts?: number }, rng?: Rng): void {
    this.activity.seedWorld(options, rng);
  }

  seedExisting(options: ExistingWorkspace, rng: Rng = this.state.rng): void {
    seedExisting(this.state, options, rng);
  }

  randomStep(rng?: Rng, options?: { silent?: boolean }): StepResult {
    return this.activity.randomStep(rng, options);
  }
}
