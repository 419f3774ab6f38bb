import { Injectable } from '@nestjs/common';
import { DatabaseService, Queryable } from '../../database/database.service';
import { NotificationSignal } from '../../notifications/notification-signal';
import { ANY_SUBSCRIPTION, FAN_OUT_RESULT, fanOutCte, FanOutResult, isoSql } from '../../notifications/outbox-sql';
import { PozyAccountDto } from '../../pozy/dto/pozy-account.dto';

export interface ProfileRead {
  readId: string;
  startedAt: Date;
  /** Per account id, the latest timestamp among the events this read answers. */
  lastEventAt: Map<string, Date>;
}

export interface ProfileWriteOutcome {
  written: number;
  /** Accounts the mirror did not hold before. */
  created: number;
  removed: number;
  stale: number;
  /** Accounts whose mirrored state changed (removals included). */
  changed: number;
  /** Change notifications queued for subscribers, in the same transaction. */
  notified: number;
}

// What subscribers see of a change: the account as GET /accounts/:id answers it, with its version.
const CHANGES = `
changes AS (
  SELECT CASE WHEN w.removed_at IS NULL THEN 'account.changed' ELSE 'account.removed' END AS type,
         'account:' || w.id AS resource_key, w.sequence, NULL::timestamptz AS pozy_updated_at,
         ARRAY[w.platform] AS platforms, ARRAY[w.profile_id] AS profile_ids,
         jsonb_build_object(
           'id', w.id, 'sequence', w.sequence, 'pozyUpdatedAt', NULL,
           'account', jsonb_build_object(
             'id', w.id, 'profileId', w.profile_id, 'platform', w.platform, 'username', w.username,
             'displayName', w.display_name, 'isActive', w.is_active, 'needsReconnection', w.needs_reconnection,
             'lastEventAt', ${isoSql('w.last_event_at')}, 'syncedAt', ${isoSql('w.synced_at')},
             'removedAt', ${isoSql('w.removed_at')})) AS data
    FROM written w
   -- The read that changed the row leaves its id in changed_by: a re-read of the same state does not.
   WHERE w.changed_by = w.read_id AND ${ANY_SUBSCRIPTION}
)`;

// The mirrored state, bookkeeping aside: a difference is a change to notify.
const ACCOUNT_DIFFERS = `
(a.profile_id, a.platform, a.username, a.display_name, a.is_active, a.needs_reconnection, a.removed_at IS NULL)
IS DISTINCT FROM
(excluded.profile_id, excluded.platform, excluded.username, excluded.display_name, excluded.is_active,
 excluded.needs_reconnection, true)`;

// Accounts have no version in Pozy: the read that started later wins. $1: the accounts as JSON rows; $2, $3: the
// read's start and id.
const WRITE_ACCOUNTS = `
WITH written AS (
INSERT INTO account AS a (id, profile_id, platform, username, display_name, is_active, needs_reconnection,
                          last_event_at, synced_at, read_started_at, read_id, removed_at, sequence, changed_by)
SELECT id, profile_id, platform, username, display_name, is_active, needs_reconnection, last_event_at, now(),
       $2::timestamptz, $3::uuid, NULL, 1, $3::uuid
  FROM jsonb_to_recordset($1::jsonb) AS t(id text, profile_id text, platform text, username text, display_name text,
                                        is_active boolean, needs_reconnection boolean, last_event_at timestamptz)
 ORDER BY id
ON CONFLICT (id) DO UPDATE
   SET profile_id = excluded.profile_id, platform = excluded.platform, username = excluded.username,
       display_name = excluded.display_name, is_active = excluded.is_active,
       needs_reconnection = excluded.needs_reconnection,
       last_event_at = greatest(a.last_event_at, excluded.last_event_at), synced_at = now(),
       read_started_at = excluded.read_started_at, read_id = excluded.read_id, removed_at = NULL,
       sequence = a.sequence + CASE WHEN ${ACCOUNT_DIFFERS} THEN 1 ELSE 0 END,
       changed_by = CASE WHEN ${ACCOUNT_DIFFERS} THEN excluded.read_id ELSE a.changed_by END
 WHERE excluded.read_started_at > a.read_started_at
RETURNING a.*, (a.xmax = 0) AS inserted
), ${CHANGES}, ${fanOutCte('changes')}
${FAN_OUT_RESULT}`;

// Accounts of the profile that its list no longer has were removed (kept, queryable, marked).
const MARK_REMOVED = `
WITH written AS (
UPDATE account
   SET removed_at = now(), synced_at = now(), read_started_at = $3, read_id = $4, sequence = sequence + 1, changed_by = $4
 WHERE profile_id = $1 AND NOT (id = ANY($2::text[])) AND removed_at IS NULL AND read_started_at < $3
RETURNING *, false AS inserted
), ${CHANGES}, ${fanOutCte('changes')}
${FAN_OUT_RESULT}`;

@Injectable()
export class AccountMirrorRepository {
  constructor(
    private readonly database: DatabaseService,
    private readonly signal: NotificationSignal,
  ) {}

  /**
   * Writes a profile's whole account list in one transaction: every account listed, and the removal of the rest,
   * with the notifications of what changed.
   */
  async writeProfile(profileId: string, accounts: PozyAccountDto[], read: ProfileRead): Promise<ProfileWriteOutcome> {
    const client = await this.database.pool.connect();
    try {
      await client.query('BEGIN');
      const written = await this.writeAccounts(accounts, read, client);
      const ids = accounts.map((account) => account._id);
      const removed = (await client.query<FanOutResult>(MARK_REMOVED, [profileId, ids, read.startedAt, read.readId])).rows[0];
      await client.query('COMMIT');
      this.signal.queued(written.notified + removed.notified);
      return {
        written: written.written,
        created: written.created,
        removed: removed.written,
        stale: accounts.length - written.written,
        changed: written.changed + removed.changed,
        notified: written.notified + removed.notified,
      };
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  /** Which of these account ids the mirror holds (removed ones included). */
  async existing(ids: string[]): Promise<Set<string>> {
    const { rows } = await this.database.pool.query<{ id: string }>('SELECT id FROM account WHERE id = ANY($1::text[])', [ids]);
    return new Set(rows.map((r) => r.id));
  }

  /** Which of these accounts the mirror holds exactly as Pozy listed them (bookkeeping aside). */
  async unchanged(accounts: PozyAccountDto[]): Promise<Set<string>> {
    const { rows } = await this.database.pool.query<{ id: string }>(
      `SELECT a.id FROM account a
         JOIN jsonb_to_recordset($1::jsonb) AS t(id text, profile_id text, platform text, username text, display_name text,
                                              is_active boolean, needs_reconnection boolean) ON t.id = a.id
        WHERE a.removed_at IS NULL
          AND (a.profile_id, a.platform, a.username, a.display_name, a.is_active, a.needs_reconnection)
              IS NOT DISTINCT FROM (t.profile_id, t.platform, t.username, t.display_name, t.is_active, t.needs_reconnection)`,
      [JSON.stringify(accounts.map(accountRow))],
    );
    return new Set(rows.map((r) => r.id));
  }

  /**
   * Writes accounts of any profiles as one read listed them, removing none (a part of a list says nothing of what
   * it leaves out), inside the caller's transaction: the caller tells the NotificationSignal once it commits.
   */
  async writeAccounts(accounts: PozyAccountDto[], read: ProfileRead, client: Queryable): Promise<FanOutResult> {
    const rows = accounts.map((account) => ({ ...accountRow(account), last_event_at: read.lastEventAt.get(account._id)?.toISOString() ?? null }));
    return (await client.query<FanOutResult>(WRITE_ACCOUNTS, [JSON.stringify(rows), read.startedAt, read.readId])).rows[0];
  }
}

/** An account as the mirror's columns hold it. */
function accountRow(account: PozyAccountDto) {
  return {
    id: account._id,
    profile_id: account.profileId,
    platform: account.platform,
    username: account.username ?? null,
    display_name: account.displayName ?? null,
    is_active: account.isActive,
    needs_reconnection: account.needsReconnection ?? false,
  };
}
