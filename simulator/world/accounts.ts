/** Profiles and their social accounts: connecting, disconnecting, reconnecting, removing, and reading them. */
import type { Account, Profile } from './pozy-shapes';
import { AccountRecord, WorldError, WorldState } from './state';
import { accountEventBlock, copyJson, restAccount } from './views';

/** `updateAccount`'s changes: only the fields given (not undefined) change. */
export interface AccountChanges {
  displayName?: string;
  /** null: the picture was removed. */
  profilePicture?: string | null;
  enabled?: boolean;
  metadata?: Record<string, unknown>;
  /** Also sets followersLastUpdated. */
  followersCount?: number;
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

export class Accounts {
  constructor(private readonly state: WorldState) {}

  createProfile(name: string): Profile {
    this.state.clock.tick();
    const profile: Profile = {
      _id: this.state.rng.objectId(),
      name,
      slug:
        name
          .toLowerCase()
          .replace(/[^a-z0-9]+/g, '-')
          .replace(/^-|-$/g, '') || 'profile',
    };
    this.state.addProfile(profile);
    return { ...profile };
  }

  connectAccount(profileId: string, platform: string, username: string, displayName?: string): Account {
    if (!this.state.profiles.has(profileId)) throw new WorldError('not_found', `No profile ${profileId}`);
    const time = this.state.clock.tick();
    const id = this.state.rng.objectId();
    const record: AccountRecord = {
      id,
      profileId,
      platform,
      username,
      displayName: displayName ?? displayNameOf(username),
      profilePicture: profilePictureOf(id),
      isActive: true,
      needsReconnection: false,
      enabled: true,
      removed: false,
      parentAccountId: parentAccountOf(this.state.accountsOfProfile.get(profileId)!, platform),
      updatedAt: time,
    };
    this.state.addAccount(record);
    this.state.emit(time, 'account.connected', { account: accountEventBlock(record) });
    return restAccount(this.state, record);
  }

  /** Intentional: the user disconnected it. Unintentional: the platform declared the token dead (needs reconnection). */
  disconnectAccount(accountId: string, options: { intentional?: boolean; reason?: string } = {}): Account {
    const record = this.state.liveAccount(accountId);
    if (!record.isActive) throw new WorldError('invalid_state', `Account ${accountId} is already disconnected`);
    const time = this.state.clock.tick();
    const intentional = options.intentional ?? false;
    record.isActive = false;
    record.needsReconnection = !intentional;
    record.updatedAt = time;
    this.state.emit(time, 'account.disconnected', {
      account: {
        ...accountEventBlock(record),
        disconnectionType: intentional ? 'intentional' : 'unintentional',
        reason: options.reason ?? (intentional ? 'Disconnected by the user' : 'Token expired or revoked'),
      },
    });
    return restAccount(this.state, record);
  }

  reconnectAccount(accountId: string): Account {
    const record = this.state.liveAccount(accountId);
    if (record.isActive) throw new WorldError('invalid_state', `Account ${accountId} is connected`);
    const time = this.state.clock.tick();
    record.isActive = true;
    record.needsReconnection = false;
    record.updatedAt = time;
    this.state.emit(time, 'account.connected', { account: accountEventBlock(record) });
    return restAccount(this.state, record);
  }

  /**
   * Changes the account's name, picture, enabled flag, metadata or follower count (with followersLastUpdated):
   * only the fields given. Pozy sends no event for these; the account's own version moves on, as for any mutation.
   */
  updateAccount(accountId: string, changes: AccountChanges): Account {
    const record = this.state.liveAccount(accountId);
    const { displayName, profilePicture, enabled, metadata, followersCount } = changes;
    if (displayName !== undefined && typeof displayName !== 'string') throw new WorldError('invalid_argument', 'displayName must be a string');
    if (profilePicture !== undefined && profilePicture !== null && typeof profilePicture !== 'string') {
      throw new WorldError('invalid_argument', 'profilePicture must be a string or null');
    }
    if (enabled !== undefined && typeof enabled !== 'boolean') throw new WorldError('invalid_argument', 'enabled must be a boolean');
    if (metadata !== undefined && (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata))) {
      throw new WorldError('invalid_argument', 'metadata must be an object');
    }
    if (followersCount !== undefined && (!Number.isSafeInteger(followersCount) || followersCount < 0)) {
      throw new WorldError('invalid_argument', 'followersCount must be a non-negative integer');
    }
    const time = this.state.clock.tick();
    if (displayName !== undefined) record.displayName = displayName;
    if (profilePicture !== undefined) record.profilePicture = profilePicture;
    if (enabled !== undefined) record.enabled = enabled;
    if (metadata !== undefined) record.metadata = copyJson(metadata);
    if (followersCount !== undefined) {
      record.followersCount = followersCount;
      record.followersLastUpdated = time;
    }
    record.updatedAt = time;
    return restAccount(this.state, record);
  }

  /** Gone from its profile's list; Pozy sends no event for it. Posts keep its id, unpopulated. */
  removeAccount(accountId: string): void {
    const record = this.state.liveAccount(accountId);
    record.removed = true;
    record.updatedAt = this.state.clock.tick();
    this.state.liveAccounts.splice(this.state.liveAccounts.indexOf(record), 1);
    this.state.postGroups = undefined;
  }

  getAccount(accountId: string): Account | undefined {
    const record = this.state.accounts.get(accountId);
    return record && !record.removed ? restAccount(this.state, record) : undefined;
  }

  /** Every account not removed, in connection order. */
  listAccounts(): Account[] {
    return this.state.liveAccounts.map((a) => restAccount(this.state, a));
  }

  /** The accounts not removed matching `query`, in connection order, sliced when `limit` is given; and how many match. */
  queryAccounts(query: AccountQuery): { accounts: Account[]; total: number } {
    const candidates = query.profileId === undefined ? this.state.liveAccounts : (this.state.accountsOfProfile.get(query.profileId) ?? []);
    const matching = candidates.filter(
      (a) =>
        !a.removed &&
        (query.platform === undefined || a.platform === query.platform) &&
        (query.connected === undefined || a.isActive === query.connected),
    );
    const offset = query.offset ?? 0;
    const page = query.limit === undefined ? matching.slice(offset) : matching.slice(offset, offset + query.limit);
    return { accounts: page.map((a) => restAccount(this.state, a)), total: matching.length };
  }

  listProfiles(): Profile[] {
    return [...this.state.profiles.values()].map((p) => ({ ...p }));
  }

  /** The profile an account belongs (or belonged, if removed) to: a post's profile comes from its accounts. */
  profileOfAccount(accountId: string): string | undefined {
    return this.state.accounts.get(accountId)?.profileId;
  }

  /** The account's own version (time of its last mutation, ms); not something Pozy's API shows. */
  accountVersion(accountId: string): number | undefined {
    return this.state.accounts.get(accountId)?.updatedAt;
  }

  /** Ids of the accounts removed from their profile. */
  removedAccountIds(): string[] {
    return [...this.state.accounts.values()].filter((a) => a.removed).map((a) => a.id);
  }
}

export function displayNameOf(username: string): string {
  return username.replace(/[._-]+/g, ' ').replace(/\b\w/g, (c) => c.toUpperCase());
}

/** The picture Pozy stores for an account (a CDN URL), from its id. */
export function profilePictureOf(accountId: string): string {
  return `https://cdn.pozy.ai/avatars/${accountId}.jpg`;
}

/** An Instagram account sits under its profile's Facebook page (the first still there), when it has one. */
export function parentAccountOf(accountsOfProfile: readonly AccountRecord[], platform: string): string | undefined {
  if (platform !== 'instagram') return undefined;
  return accountsOfProfile.find((a) => a.platform === 'facebook' && !a.removed)?.id;
}
