import { Injectable } from '@nestjs/common';
import { DatabaseService } from '../../database/database.service';
import { decodeCursor, page } from '../cursor';
import { ListAccountsQuery } from './dto/list-accounts.query';

/** A mirrored account as the query endpoints answer it. */
export interface MirroredAccount {
  id: string;
  profileId: string;
  platform: string;
  username: string | null;
  displayName: string | null;
  isActive: boolean;
  needsReconnection: boolean;
  lastEventAt: Date | null;
  syncedAt: Date;
  removedAt: Date | null;
}

const SELECT_ACCOUNTS = `
SELECT id, profile_id AS "profileId", platform, username, display_name AS "displayName", is_active AS "isActive",
       needs_reconnection AS "needsReconnection", last_event_at AS "lastEventAt", synced_at AS "syncedAt",
       removed_at AS "removedAt"
  FROM account`;

const DEFAULT_LIMIT = 50;

/** Reads the mirror only: these never call Pozy. */
@Injectable()
export class AccountsQuery {
  constructor(private readonly database: DatabaseService) {}

  async list(query: ListAccountsQuery): Promise<{ data: MirroredAccount[]; nextCursor: string | null }> {
    const limit = query.limit ?? DEFAULT_LIMIT;
    const { rows } = await this.database.pool.query<MirroredAccount>(
      `${SELECT_ACCOUNTS}
        WHERE ($1::text IS NULL OR profile_id = $1)
          AND ($2::text IS NULL OR platform = $2)
          AND ($3::boolean IS NULL OR (is_active AND NOT needs_reconnection) = $3)
          AND ($4::boolean OR removed_at IS NULL)
          AND ($5::text IS NULL OR id > $5)
        ORDER BY id
        LIMIT $6`,
      [
        query.profileId ?? null,
        query.platform ?? null,
        query.connected ?? null,
        query.includeRemoved === true,
        decodeCursor(query.cursor),
        limit + 1,
      ],
    );
    return page(rows, limit);
  }

  async get(id: string): Promise<MirroredAccount | undefined> {
    const { rows } = await this.database.pool.query<MirroredAccount>(`${SELECT_ACCOUNTS} WHERE id = $1`, [id]);
    return rows[0];
  }
}
