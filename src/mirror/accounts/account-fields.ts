import { Insertable, Selectable, sql } from 'kysely';
import { isoText } from '../../database/sql-expressions';
import type { DB } from '../../generated/kysely/database';
import { PozyAccountDto } from '../../pozy/dto/pozy-account.dto';
import { extraFields, FieldOrder, WholeObject } from '../whole-object';

/**
 * The whole account, as for posts (../posts/post-fields.ts): what filters and the guard need in columns, everything
 * else Pozy answers in `extra`; answered under Pozy's names, `id` for `_id` and `profileId` always the plain id.
 */

/** Pozy's fields as the mirror answers them, in that order (fields Pozy adds later follow these). */
export const POZY_ACCOUNT_FIELDS = [
  'id',
  'profileId',
  'platform',
  'username',
  'displayName',
  'profilePicture',
  'profileUrl',
  'isActive',
  'needsReconnection',
  'enabled',
  'parentAccountId',
  'metadata',
  'followersCount',
  'followersLastUpdated',
] as const;

/** The mirror's own fields, after Pozy's. */
export const MIRROR_ACCOUNT_FIELDS = ['workspaceId', 'lastEventAt', 'syncedAt', 'removedAt', 'sequence'] as const;

export const ACCOUNT_FIELD_ORDER: FieldOrder = { pozy: POZY_ACCOUNT_FIELDS, mirror: MIRROR_ACCOUNT_FIELDS };

/** The columns of an account that its profile's list gives. */
export type AccountColumns = Required<
  Pick<
    Insertable<DB['account']>,
    'id' | 'profile_id' | 'platform' | 'username' | 'display_name' | 'is_active' | 'needs_reconnection' | 'enabled' | 'extra'
  >
>;

// Held in columns of their own, checked by PozyAccountDto (or the account's key).
const IN_COLUMNS = new Set(['_id', 'id', 'profileId', 'platform', 'username', 'displayName', 'isActive', 'needsReconnection']);

/** An account of Pozy's as the mirror's columns; lenient beyond what the mirror relies on, like postColumns. */
export function accountColumns(account: PozyAccountDto): AccountColumns {
  const extra = extraFields(account, IN_COLUMNS);
  const enabled: unknown = extra.enabled;
  if (typeof enabled === 'boolean') delete extra.enabled;
  return {
    id: account._id,
    profile_id: account.profileId,
    platform: account.platform,
    username: account.username ?? null,
    display_name: account.displayName ?? null,
    is_active: account.isActive,
    needs_reconnection: account.needsReconnection ?? false,
    enabled: typeof enabled === 'boolean' ? enabled : null,
    extra,
  };
}

type AccountRow = Selectable<DB['account']>;

/** The account as the mirror answers it (see wholePost): the query endpoints and the notifications read this. */
export function wholeAccount(alias: string): WholeObject {
  const c = <C extends keyof AccountRow>(name: C) => sql.ref<AccountRow[C]>(`${alias}.${name}`);
  const pozy = {
    id: c('id'),
    profileId: c('profile_id'),
    platform: c('platform'),
    username: c('username'),
    displayName: c('display_name'),
    isActive: c('is_active'),
    needsReconnection: c('needs_reconnection'),
    enabled: c('enabled'),
  };
  const mirror = {
    workspaceId: c('workspace_id'),
    lastEventAt: isoText(c('last_event_at')),
    syncedAt: isoText(c('synced_at')),
    removedAt: isoText(c('removed_at')),
    sequence: c('sequence'),
  };
  return { pozy, extra: c('extra'), mirror };
}
