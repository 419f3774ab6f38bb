/** Random activity in the world: a seeded small world, and one realistic mutation at a time (`randomStep`). */
import type { Rng } from '../faults';
import type { Accounts } from './accounts';
import { HOUR } from './clock';
import { Account, PLATFORMS, Post } from './pozy-shapes';
import type { Posts, PublishOutcome } from './posts';
import { AccountRecord, PostRecord, WorldState } from './state';
import { randomContent, randomDetails } from './random-content';
import { restPost } from './views';

export interface StepResult {
  action: string;
  postId?: string;
  accountId?: string;
  profileId?: string;
}

export class RandomActivity {
  constructor(
    private readonly state: WorldState,
    private readonly accounts: Accounts,
    private readonly posts: Posts,
  ) {}

  /** Profiles, each with accounts on distinct platforms, and posts in a realistic mix of states. */
  seedWorld(options: { profiles?: number; accountsPerProfile?: number; posts?: number } = {}, rng: Rng = this.state.rng): void {
    const profiles = options.profiles ?? 2;
    const accountsPerProfile = options.accountsPerProfile ?? 3;
    for (let i = 0; i < profiles; i++) {
      const profile = this.accounts.createProfile(`Brand ${this.state.profiles.size + 1}`);
      for (let j = 0; j < accountsPerProfile; j++) this.connectRandomAccount(profile._id, rng);
    }
    for (let i = 0; i < (options.posts ?? 10); i++) {
      const post = this.createRandomPost(rng, rng.chance(0.8));
      if (!post) break;
      const roll = rng.next();
      if (roll < 0.5) this.posts.publishPost(post._id, this.randomOutcomes(post, rng), rng);
      else if (roll < 0.6) this.posts.cancelPost(post._id);
    }
  }

  /**
   * One realistic mutation chosen by `rng` (create, publish with random outcomes, cancel, edit, disconnect, ...).
   * With `silent: false`, only mutations Pozy announces with an event: no edits, no removed accounts, no deletion
   * of a post with nothing published (a mirror can only learn those by polling). Costs no more than O(accounts +
   * log posts), however large the world.
   */
  randomStep(rng: Rng = this.state.rng, options: { silent?: boolean } = {}): StepResult {
    const silent = options.silent ?? true;
    if (this.state.profiles.size === 0) return { action: 'createProfile', profileId: this.accounts.createProfile('Brand 1')._id };
    const live = this.state.liveAccounts;
    if (live.length === 0) {
      const account = this.connectRandomAccount(rng.pick(this.state.profileIds), rng);
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
        const rest = restPost(this.state, post);
        return { action: 'publishPost', postId: this.posts.publishPost(post.id, this.randomOutcomes(rest, rng), rng)._id };
      }
    } else if (roll < 55) {
      const post = this.samplePost(rng, (p) => p.status === 'scheduled' || p.status === 'draft');
      if (post) return { action: 'cancelPost', postId: this.posts.cancelPost(post.id)._id };
    } else if (roll < 64) {
      const post = silent ? this.samplePost(rng, () => true) : undefined;
      if (post) return { action: 'editPost', postId: this.posts.editPost(post.id, { content: randomContent(rng) })._id };
    } else if (roll < 68) {
      const post = this.samplePost(rng, (p) => p.targets.some((t) => t.status === 'published'));
      if (post) {
        const target = rng.pick(post.targets.filter((t) => t.status === 'published'));
        this.posts.deletePlatformPost(post.id, target.accountId);
        return { action: 'deletePlatformPost', postId: post.id, accountId: target.accountId };
      }
    } else if (roll < 71) {
      const post = this.samplePost(rng, (p) => silent || p.targets.some((t) => t.status === 'published'));
      if (post) {
        this.posts.deletePost(post.id);
        return { action: 'deletePost', postId: post.id };
      }
    } else if (roll < 78) {
      const active = live.filter((a) => a.isActive);
      // Keep most of the workspace connected, so publishing stays the common case.
      if (active.length > live.length / 2) {
        const account = rng.pick(active);
        this.accounts.disconnectAccount(account.id, { intentional: rng.chance(0.3) });
        return { action: 'disconnectAccount', accountId: account.id };
      }
    } else if (roll < 86) {
      const inactive = live.filter((a) => !a.isActive);
      if (inactive.length > 0) {
        const account = rng.pick(inactive);
        this.accounts.reconnectAccount(account.id);
        return { action: 'reconnectAccount', accountId: account.id };
      }
    } else if (roll < 90) {
      const account = this.connectRandomAccount(rng.pick(this.state.profileIds), rng);
      return { action: 'connectAccount', accountId: account._id };
    } else if (roll < 91) {
      if (silent && live.length > 2) {
        const account = rng.pick(live);
        this.accounts.removeAccount(account.id);
        return { action: 'removeAccount', accountId: account.id };
      }
    }
    const post = this.createRandomPost(rng, true);
    if (post) return { action: 'createScheduledPost', postId: post._id };
    const account = this.connectRandomAccount(rng.pick(this.state.profileIds), rng);
    return { action: 'connectAccount', accountId: account._id };
  }

  private connectRandomAccount(profileId: string, rng: Rng): Account {
    const taken = new Set(
      this.state.accountsOfProfile
        .get(profileId)!
        .filter((a) => !a.removed)
        .map((a) => a.platform),
    );
    const free = PLATFORMS.filter((p) => !taken.has(p));
    const platform = rng.pick(free.length > 0 ? free : PLATFORMS);
    this.state.accountCounter += 1;
    const profile = this.state.profiles.get(profileId)!;
    return this.accounts.connectAccount(profileId, platform, `${profile.slug}.${platform}${this.state.accountCounter}`);
  }

  /** A post on 1–3 accounts of one profile; undefined when no profile has an account. */
  private createRandomPost(rng: Rng, scheduled: boolean): Post | undefined {
    const groups = (this.state.postGroups ??= this.groupLiveAccounts());
    if (groups.length === 0) return undefined;
    const accounts = [...rng.pick(groups)];
    const chosen: string[] = [];
    const count = 1 + rng.int(Math.min(3, accounts.length));
    while (chosen.length < count) chosen.push(accounts.splice(rng.int(accounts.length), 1)[0].id);
    const profileId = this.state.accounts.get(chosen[0])!.profileId;
    return this.posts.createPost({
      content: randomContent(rng),
      accountIds: chosen,
      scheduledFor: scheduled ? this.state.clock.time + HOUR * (1 + rng.int(72)) : undefined,
      ...randomDetails(this.state, rng, profileId, () => this.samplePost(rng, (p) => p.status === 'published')?.id),
    });
  }

  /** Live accounts by profile, profiles in the order of their first live account. */
  private groupLiveAccounts(): AccountRecord[][] {
    const byProfile = new Map<string, AccountRecord[]>();
    for (const account of this.state.liveAccounts) {
      const group = byProfile.get(account.profileId);
      if (group) group.push(account);
      else byProfile.set(account.profileId, [account]);
    }
    return [...byProfile.values()];
  }

  private randomOutcomes(post: Post, rng: Rng): Record<string, PublishOutcome> {
    const outcomes: Record<string, PublishOutcome> = {};
    for (const target of post.platforms) {
      const accountId = typeof target.accountId === 'string' ? target.accountId : target.accountId._id;
      const account = this.state.accounts.get(accountId);
      const usable = account !== undefined && !account.removed && account.isActive;
      outcomes[accountId] = usable && rng.chance(0.85) ? 'published' : 'failed';
    }
    return outcomes;
  }

  /** A random live post matching `accept`, from a few draws (cheap on large worlds; may miss a rare match). */
  private samplePost(rng: Rng, accept: (post: PostRecord) => boolean): PostRecord | undefined {
    if (this.state.postOrder.size === 0) return undefined;
    for (let i = 0; i < 24; i++) {
      const record = this.state.postOrder.at(rng.int(this.state.postOrder.size));
      if (accept(record)) return record;
    }
    return undefined;
  }
}
