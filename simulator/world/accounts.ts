/** Profiles and their social accounts: connecting, disconnecting, reconnecting, removing, and reading them. */
import type { Account, Profile } from './pozy-shapes';
import { AccountRecord, WorldError, WorldState } from './state';
import { accountEventBlock, restAccount } from './views';

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
    const record: AccountRecord = {
      id: this.state.rng.objectId(),
      profileId,
      platform,
      username,
      displayName: displayName ?? displayNameOf(username),
      isActive: true,
      needsReconnection: false,
      removed: false,
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
