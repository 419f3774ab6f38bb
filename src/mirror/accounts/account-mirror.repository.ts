import { Injectable } from '@nestjs/common';
import { DatabaseService } from '../../database/database.service';
import { NotificationSignal } from '../../notifications/notification-signal';
import { FAN_OUT_RESULT, fanOutCte, FanOutResult, isoSql } from '../../notifications/outbox-sql';
import { PozyAccountDto } from '../../pozy/dto/pozy-account.dto';

export interface ProfileRead {
  readId: string;
  startedAt: Date;
  /** Per account id, the latest timestamp among the events this read answers. */
  lastEventAt: Map<string, Date>;
}

export interface ProfileWriteOutcome {
  written: number;
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
   WHERE w.changed_by = w.read_id
)`;

// The mirrored state, bookkeeping aside: a difference is a change to notify.
const ACCOUNT_DIFFERS = `
(a.profile_id, a.platform, a.username, a.display_name, a.is_active, a.needs_reconnection, a.removed_at IS NULL)
IS DISTINCT FROM
(excluded.profile_id, excluded.platform, excluded.username, excluded.display_name, excluded.is_active,
 excluded.needs_reconnection, true)`;

// Accounts have no version in Pozy: the read that started later wins.
const WRITE_ACCOUNTS = `
WITH written AS (
INSERT INTO account AS a (id, profile_id, platform, username, display_name, is_active, needs_reconnection,
                          last_event_at, synced_at, read_started_at, read_id, removed_at, sequence, changed_by)
SELECT id, $2, platform, username, display_name, is_active, needs_reconnection, last_event_at, now(), $3, $4, NULL, 1, $4
  FROM json_to_recordset($1::json) AS t(id text, platform text, username text, display_name text,
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
RETURNING a.*
), ${CHANGES}, ${fanOutCte('changes')}
${FAN_OUT_RESULT}`;

// Accounts of the profile that its list no longer has were removed (kept, queryable, marked).
const MARK_REMOVED = `
WITH written AS (
UPDATE account
   SET removed_at = now(), synced_at = now(), read_started_at = $3, read_id = $4, sequence = sequence + 1, changed_by = $4
 WHERE profile_id = $1 AND NOT (id = ANY($2::text[])) AND removed_at IS NULL AND read_started_at < $3
RETURNING *
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
    const rows = accounts.map((account) => ({
      id: account._id,
      platform: account.platform,
      username: account.username ?? null,
      display_name: account.displayName ?? null,
      is_active: account.isActive,
      needs_reconnection: account.needsReconnection ?? false,
      last_event_at: read.lastEventAt.get(account._id)?.toISOString() ?? null,
    }));
    const client = await this.database.pool.connect();
    try {
      await client.query('BEGIN');
      const written = (await client.query<FanOutResult>(WRITE_ACCOUNTS, [JSON.stringify(rows), profileId, read.startedAt, read.readId])).rows[0];
      const removed = (await client.query<FanOutResult>(MARK_REMOVED, [profileId, rows.map((r) => r.id), read.startedAt, read.readId])).rows[0];
      await client.query('COMMIT');
      this.signal.queued(written.notified + removed.notified);
      return {
        written: written.written,
        removed: removed.written,
        stale: rows.length - written.written,
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
}
