import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { DatabaseService } from '../database/database.service';

export interface DeadLetter {
  id: string;
  queue: 'delivery';
  kind: 'reconcile' | 'notification';
  resourceKey: string;
  payload: unknown;
  reason: string;
  error: string;
  attempts: number;
  firstFailureAt: Date;
  lastFailureAt: Date;
  createdAt: Date;
  replayedAt: Date | null;
  /** Set when no replay is needed any more (e.g. a newer version of the notification was delivered), with why. */
  resolvedAt: Date | null;
  resolution: string | null;
  replayCount: number;
}

const COLUMNS = `id, queue, kind, resource_key AS "resourceKey", payload, reason, error, attempts,
  first_failure_at AS "firstFailureAt", last_failure_at AS "lastFailureAt", created_at AS "createdAt",
  replayed_at AS "replayedAt", replay_count AS "replayCount", resolved_at AS "resolvedAt", resolution`;

@Injectable()
export class DeadLetterRepository {
  constructor(private readonly database: DatabaseService) {}

  /** A reconcile given up on. (Notification letters are written with the attempt that gave up: notification.repository.ts.) */
  async addReconcile(letter: Pick<DeadLetter, 'resourceKey' | 'payload' | 'reason' | 'error' | 'attempts' | 'firstFailureAt'>): Promise<string> {
    const id = randomUUID();
    await this.database.pool.query(
      `INSERT INTO dead_letter (id, queue, kind, resource_key, payload, reason, error, attempts, first_failure_at, last_failure_at)
       VALUES ($1, 'delivery', 'reconcile', $2, $3::jsonb, $4, $5, $6, $7, now())`,
      [id, letter.resourceKey, JSON.stringify(letter.payload), letter.reason, letter.error, letter.attempts, letter.firstFailureAt],
    );
    return id;
  }

  /** Newest first. */
  async list(limit: number): Promise<DeadLetter[]> {
    const { rows } = await this.database.pool.query<DeadLetter>(
      `SELECT ${COLUMNS} FROM dead_letter WHERE queue = 'delivery' ORDER BY created_at DESC, id LIMIT $1`,
      [limit],
    );
    return rows;
  }

  async get(id: string): Promise<DeadLetter | undefined> {
    const { rows } = await this.database.pool.query<DeadLetter>(`SELECT ${COLUMNS} FROM dead_letter WHERE id = $1`, [id]);
    return rows[0];
  }

  /** Those neither replayed nor resolved: what a bulk replay takes. */
  async unreplayed(): Promise<DeadLetter[]> {
    const { rows } = await this.database.pool.query<DeadLetter>(
      `SELECT ${COLUMNS} FROM dead_letter WHERE queue = 'delivery' AND replayed_at IS NULL AND resolved_at IS NULL ORDER BY created_at`,
    );
    return rows;
  }

  async markReplayed(id: string): Promise<void> {
    await this.database.pool.query('UPDATE dead_letter SET replayed_at = now(), replay_count = replay_count + 1 WHERE id = $1', [id]);
  }
}
