/** `PozyWorld.seedExisting`: a year of a workspace's history, made at once before anyone listened. */
import type { Rng } from '../faults';
import { displayNameOf, profilePictureOf } from './accounts';
import { DAY, HOUR, YEAR } from './clock';
import { AUTH_EXPIRED, failureFields, FAILURES, platformPost } from './platform-results';
import { PLATFORMS, Profile } from './pozy-shapes';
import { randomContent, randomDetails } from './random-content';
import { AccountRecord, PostRecord, TargetRecord, WorldError, WorldState } from './state';

/** A workspace that existed before pozy-sync was deployed (`seedExisting`). */
export interface ExistingWorkspace {
  posts: number;
  accounts: number;
  /** Default: one per 8 accounts, so each profile's accounts are on distinct platforms. */
  profiles?: number;
}

/** Kinds of existing posts, and per age their cumulative shares (the rest is published). */
const EXISTING_KINDS = ['scheduled', 'draft', 'cancelled', 'failed', 'partial'] as const;
const EXISTING_MIX = {
  // Under an hour old: not published yet.
  lastHour: [0.7, 1, 1, 1, 1],
  lastTwoWeeks: [0.4, 0.5, 0.55, 0.6, 0.66],
  older: [0.02, 0.08, 0.15, 0.21, 0.29],
} as const;

/**
 * A workspace as it stood before pozy-sync was deployed, on an empty world: profiles, accounts spread over them
 * (distinct platforms within a profile while there are platforms left), some disconnected, and posts created over
 * the past year in a realistic mix: drafts, scheduled for later, published, partial, failed (with the error),
 * cancelled, some targets since removed from their platform. Nothing here happened while anyone listened, so no
 * event is emitted; every timestamp is before now (scheduledFor of scheduled posts excepted), createdAt strictly
 * increases, and the next mutation comes after all of it. Linear in posts + accounts.
 */
export function seedExisting(state: WorldState, options: ExistingWorkspace, rng: Rng): void {
  const { posts, accounts } = options;
  const profiles = options.profiles ?? Math.ceil(accounts / 8);
  for (const [name, value] of Object.entries({ posts, accounts, profiles })) {
    if (!Number.isSafeInteger(value) || value < 0) throw new WorldError('invalid_argument', `${name} must be a non-negative integer`);
  }
  if (posts > 0 && accounts === 0) throw new WorldError('invalid_argument', 'Posts need at least one account');
  if (accounts > 0 && profiles === 0) throw new WorldError('invalid_argument', 'Accounts need at least one profile');
  if (state.profiles.size > 0 || state.posts.size > 0) {
    // Seeded posts are older than anything made since: on a world already in use, creation order would no longer be createdAt order.
    throw new WorldError('invalid_state', 'seedExisting needs an empty world');
  }
  const now = state.clock.peek();
  const start = now - YEAR;
  /** Uniform integer in [low, high]. */
  const between = (low: number, high: number) => low + rng.int(high - low + 1);
  let latest = state.clock.time;

  const groups: AccountRecord[][] = [];
  for (let p = 0; p < profiles; p++) {
    const name = `Brand ${state.profiles.size + 1}`;
    const profile: Profile = { _id: state.rng.objectId(), name, slug: name.toLowerCase().replace(/ /g, '-') };
    state.addProfile(profile);
    const platforms = shuffled(PLATFORMS, rng);
    const count = Math.floor(accounts / profiles) + (p < accounts % profiles ? 1 : 0);
    const group: AccountRecord[] = [];
    for (let k = 0; k < count; k++) {
      const platform = platforms[k % platforms.length];
      state.accountCounter += 1;
      const username = `${profile.slug}.${platform}${state.accountCounter}`;
      const connected = rng.chance(0.92);
      const id = state.rng.objectId();
      const updatedAt = between(start, now - 1);
      const record: AccountRecord = {
        id,
        profileId: profile._id,
        platform,
        username,
        displayName: displayNameOf(username),
        profilePicture: rng.chance(0.9) ? profilePictureOf(id) : null,
        isActive: connected,
        // Most disconnections are the platform's (a dead token); a few are the user's.
        needsReconnection: !connected && rng.chance(0.75),
        enabled: true,
        removed: false,
        parentAccountId: undefined,
        metadata: accountMetadata(platform, rng),
        // Pozy refreshes follower counts now and then: most accounts have one.
        followersCount: undefined,
        followersLastUpdated: undefined,
        updatedAt,
      };
      if (rng.chance(0.85)) {
        record.followersCount = Math.floor(10 ** (1 + 4 * rng.next()));
        record.followersLastUpdated = between(updatedAt, now - 1);
      }
      latest = Math.max(latest, record.updatedAt);
      state.addAccount(record);
      group.push(record);
    }
    // An Instagram account sits under its profile's Facebook page, when the profile has one.
    const page = group.find((a) => a.platform === 'facebook');
    if (page) for (const account of group) if (account.platform === 'instagram') account.parentAccountId = page.id;
    if (group.length > 0) groups.push(group);
  }

  const spacing = (now - 1 - start) / posts;
  let createdAt = start;
  /** Per profile, its latest published post so far: what a recycled post copies. */
  const lastPublished = new Map<string, string>();
  for (let i = 0; i < posts; i++) {
    createdAt = Math.max(createdAt + 1, start + Math.floor((i + rng.next()) * spacing));
    const record = existingPost(state, createdAt, now, rng.pick(groups), rng, lastPublished);
    latest = Math.max(latest, record.updatedAt);
    state.addPost(record);
  }
  state.clock.setTime(latest);
}

/**
 * A post created at `createdAt` on 1–3 accounts of `group`, in the state months of activity would have left it
 * by `now`, all its times before `now`. Recent posts are mostly still ahead of their time.
 */
function existingPost(
  state: WorldState,
  createdAt: number,
  now: number,
  group: readonly AccountRecord[],
  rng: Rng,
  lastPublished: Map<string, string>,
): PostRecord {
  const between = (low: number, high: number) => low + rng.int(high - low + 1);
  const pool = [...group];
  const chosen: AccountRecord[] = [];
  const count = 1 + rng.int(Math.min(3, pool.length));
  while (chosen.length < count) chosen.push(pool.splice(rng.int(pool.length), 1)[0]);
  const profileId = group[0].profileId;
  const record: PostRecord = {
    id: state.rng.objectId(),
    position: 0,
    content: randomContent(rng),
    details: randomDetails(state, rng, profileId, () => lastPublished.get(profileId)),
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
      const { id, url } = platformPost(state.rng, account.platform, account.username);
      return { accountId: account.id, platform: account.platform, status: 'published', platformPostId: id, platformPostUrl: url, publishedAt: time };
    }
    const failure = account.isActive ? rng.pick(FAILURES) : AUTH_EXPIRED;
    return { accountId: account.id, platform: account.platform, status: 'failed', ...failureFields(account.platform, failure) };
  });
  time += between(1, 3_000);
  const published = record.targets.filter((t) => t.status === 'published');
  record.status = published.length === record.targets.length ? 'published' : published.length === 0 ? 'failed' : 'partial';
  if (published.length > 0) {
    record.publishedAt = time;
    lastPublished.set(group[0].profileId, record.id);
  }
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

/** Some accounts carry what Pozy keeps of their platform's side: a Facebook page's id, a LinkedIn organization's. */
function accountMetadata(platform: string, rng: Rng): Record<string, unknown> | undefined {
  if (platform === 'facebook') return { pageId: String(100_000_000_000_000 + rng.int(900_000_000) * 1_000_000 + rng.int(1_000_000)) };
  if (platform === 'linkedin') return { organizationUrn: `urn:li:organization:${10_000_000 + rng.int(90_000_000)}` };
  return undefined;
}

function shuffled<T>(items: readonly T[], rng: Rng): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}
