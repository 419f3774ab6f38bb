import { Injectable } from '@nestjs/common';
import { DatabaseService } from '../../database/database.service';
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
}

// Accounts have no version in Pozy: the read that started later wins.
const WRITE_ACCOUNTS = `
INSERT INTO account AS a (id, profile_id, platform, username, display_name, is_active, needs_reconnection,
                          last_event_at, synced_at, read_started_at, read_id, removed_at)
SELECT id, $2, platform, username, display_name, is_active, needs_reconnection, last_event_at, now(), $3, $4, NULL
  FROM json_to_recordset($1::json) AS t(id text, platform text, username text, display_name text,
                                        is_active boolean, needs_reconnection boolean, last_event_at timestamptz)
 ORDER BY id
ON CONFLICT (id) DO UPDATE
   SET profile_id = excluded.profile_id, platform = excluded.platform, username = excluded.username,
       display_name = excluded.display_name, is_active = excluded.is_active,
       needs_reconnection = excluded.needs_reconnection,
       last_event_at = greatest(a.last_event_at, excluded.last_event_at), synced_at = now(),
       read_started_at = excluded.read_started_at, read_id = excluded.read_id, removed_at = NULL
 WHERE excluded.read_started_at > a.read_started_at
RETURNING id`;

// Accounts of the profile that its list no longer has were removed (kept, queryable, marked).
const MARK_REMOVED = `
UPDATE account
   SET removed_at = now(), synced_at = now(), read_started_at = $3, read_id = $4
 WHERE profile_id = $1 AND NOT (id = ANY($2::text[])) AND removed_at IS NULL AND read_started_at < $3
RETURNING id`;

@Injectable()
export class AccountMirrorRepository {
  constructor(private readonly database: DatabaseService) {}

  /** Writes a profile's whole account list in one transaction: every account listed, and the removal of the rest. */
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
      const written = await client.query(WRITE_ACCOUNTS, [JSON.stringify(rows), profileId, read.startedAt, read.readId]);
      const removed = await client.query(MARK_REMOVED, [profileId, rows.map((r) => r.id), read.startedAt, read.readId]);
      await client.query('COMMIT');
      return { written: written.rowCount ?? 0, removed: removed.rowCount ?? 0, stale: rows.length - (written.rowCount ?? 0) };
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }
}
