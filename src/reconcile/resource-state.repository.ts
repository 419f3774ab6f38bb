import { Injectable } from '@nestjs/common';
import { DatabaseService } from '../database/database.service';
import { ResourceType } from '../queue/tasks';

export interface ResourceEvents {
  /** The latest timestamp of the (non-test) events received for the resource. */
  latest: Date | null;
  /** For a profile: the latest per account id. */
  perAccount: Map<string, Date>;
}

export interface ReadState {
  /** When the last successful read of the resource began. */
  lastReadAt: Date | null;
  /** When an operator last asked for a read regardless (admin resync). */
  forcedAt: Date | null;
}

@Injectable()
export class ResourceStateRepository {
  constructor(private readonly database: DatabaseService) {}

  async readState(key: string): Promise<ReadState> {
    const { rows } = await this.database.pool.query<{ last_read_at: Date | null; forced_at: Date | null }>(
      'SELECT last_read_at, forced_at FROM reconcile_request WHERE key = $1',
      [key],
    );
    return { lastReadAt: rows[0]?.last_read_at ?? null, forcedAt: rows[0]?.forced_at ?? null };
  }

  async recordRead(key: string, startedAt: Date): Promise<void> {
    await this.database.pool.query(
      'UPDATE reconcile_request SET last_read_at = greatest(last_read_at, $2) WHERE key = $1',
      [key, startedAt],
    );
  }

  /** A read failed on a timeout or an unreachable Pozy: how long (by the database's clock) have failures lasted? */
  async markFailing(key: string): Promise<{ since: Date; forMs: number }> {
    const { rows } = await this.database.pool.query<{ since: Date; for_ms: number }>(
      `UPDATE reconcile_request SET failing_since = coalesce(failing_since, now()) WHERE key = $1
       RETURNING failing_since AS since, (extract(epoch FROM now() - failing_since) * 1000)::int AS for_ms`,
      [key],
    );
    return rows[0] ? { since: rows[0].since, forMs: rows[0].for_ms } : { since: new Date(), forMs: 0 };
  }

  async clearFailing(key: string): Promise<void> {
    await this.database.pool.query('UPDATE reconcile_request SET failing_since = NULL WHERE key = $1 AND failing_since IS NOT NULL', [key]);
  }

  /** Pozy asked us to wait: the read is pending again, due no sooner than `ms` from now. */
  async postpone(key: string, ms: number): Promise<void> {
    await this.database.pool.query(
      `UPDATE reconcile_request SET due_at = greatest(coalesce(due_at, now()), now() + $2::int * interval '1 millisecond')
        WHERE key = $1`,
      [key, Math.ceil(ms)],
    );
  }

  async events(type: ResourceType, id: string): Promise<ResourceEvents> {
    if (type === 'post') {
      // Answered from the (resource_type, resource_id, timestamp) index alone.
      const { rows } = await this.database.pool.query<{ latest: Date | null }>(
        `SELECT max("timestamp") AS latest FROM pozy_event WHERE resource_type = 'post' AND resource_id = $1 AND NOT test`,
        [id],
      );
      return { latest: rows[0].latest, perAccount: new Map() };
    }
    const { rows } = await this.database.pool.query<{ account_id: string | null; latest: Date }>(
      `SELECT payload->'account'->>'accountId' AS account_id, max("timestamp") AS latest
         FROM pozy_event
        WHERE resource_type = 'profile' AND resource_id = $1 AND NOT test
        GROUP BY 1`,
      [id],
    );
    const perAccount = new Map<string, Date>();
    for (const row of rows) if (row.account_id) perAccount.set(row.account_id, row.latest);
    const latest = rows.reduce<Date | null>((max, r) => (max && max >= r.latest ? max : r.latest), null);
    return { latest, perAccount };
  }
}
