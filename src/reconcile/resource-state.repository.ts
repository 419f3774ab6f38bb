import { Injectable } from '@nestjs/common';
import { DatabaseService } from '../database/database.service';
import { ResourceType } from '../queue/tasks';

export interface ResourceEvents {
  /** The latest timestamp of the (non-test) events received for the resource. */
  latest: Date | null;
  /** For a profile: the latest per account id. */
  perAccount: Map<string, Date>;
}

@Injectable()
export class ResourceStateRepository {
  constructor(private readonly database: DatabaseService) {}

  /** When the last successful read of the resource began, if any. */
  async lastReadAt(key: string): Promise<Date | null> {
    const { rows } = await this.database.pool.query<{ last_read_at: Date | null }>(
      'SELECT last_read_at FROM reconcile_request WHERE key = $1',
      [key],
    );
    return rows[0]?.last_read_at ?? null;
  }

  async recordRead(key: string, startedAt: Date): Promise<void> {
    await this.database.pool.query(
      'UPDATE reconcile_request SET last_read_at = greatest(last_read_at, $2) WHERE key = $1',
      [key, startedAt],
    );
  }

  async events(type: ResourceType, id: string): Promise<ResourceEvents> {
    const { rows } = await this.database.pool.query<{ account_id: string | null; latest: Date }>(
      `SELECT payload->'account'->>'accountId' AS account_id, max("timestamp") AS latest
         FROM pozy_event
        WHERE resource_type = $1 AND resource_id = $2 AND NOT test
        GROUP BY 1`,
      [type, id],
    );
    const perAccount = new Map(rows.filter((r) => r.account_id).map((r) => [r.account_id!, r.latest]));
    const latest = rows.reduce<Date | null>((max, r) => (max && max >= r.latest ? max : r.latest), null);
    return { latest, perAccount };
  }
}
