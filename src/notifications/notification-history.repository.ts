import { Injectable } from '@nestjs/common';
import { DatabaseService } from '../database/database.service';
import { NotificationState, ReplaySource } from './dto/notification.query';

export interface NotificationSummary {
  id: string;
  subscriptionId: string;
  type: string;
  resourceKey: string;
  sequence: number;
  pozyUpdatedAt: Date | null;
  state: NotificationState;
  attempts: number;
  createdAt: Date;
  nextAttemptAt: Date | null;
  deliveredAt: Date | null;
  lastError: string | null;
  replayCount: number;
}

export interface NotificationAttempt {
  attemptedAt: Date;
  durationMs: number;
  statusCode: number | null;
  outcome: 'delivered' | 'retry' | 'dead';
  error: string | null;
  replay: boolean;
}

export interface NotificationDetail extends NotificationSummary {
  data: unknown;
  attemptHistory: NotificationAttempt[];
}

const COLUMNS = `n.id, n.subscription_id AS "subscriptionId", n.type, n.resource_key AS "resourceKey", n.sequence,
  n.pozy_updated_at AS "pozyUpdatedAt", n.state, n.attempts, n.created_at AS "createdAt",
  n.next_attempt_at AS "nextAttemptAt", n.delivered_at AS "deliveredAt", n.last_error AS "lastError",
  n.replay_count AS "replayCount"`;

// A newer version of the resource exists for the subscription: replaying this one could bring an older state after
// a newer one, so it is never replayed.
const NEWER_EXISTS = `
EXISTS (SELECT 1 FROM notification m
         WHERE m.subscription_id = n.subscription_id AND m.resource_key = n.resource_key
           AND m.sequence > n.sequence AND m.state <> 'cancelled')`;

// What a bulk replay takes: from the dead-letter queue, or every notification sent (delivered or dead), in both cases
// only the newest per resource.
const REPLAYABLE = `
SELECT n.id FROM notification n
 WHERE n.subscription_id = $1 AND n.created_at >= $2 AND NOT ${NEWER_EXISTS}
   AND (n.state = 'dead' OR ($3 = 'history' AND n.state = 'delivered'))
 ORDER BY n.created_at, n.id`;

// Due again with their ids unchanged, spread out so a subscriber gets at most $2 replays a second, after any
// replays it is still waiting for. The dead letters they came from are marked replayed.
const REPLAY = `
WITH chosen AS (
  SELECT n.id, n.subscription_id, row_number() OVER (PARTITION BY n.subscription_id ORDER BY n.created_at, n.id) AS ord
    FROM notification n
   WHERE n.id = ANY ($1::text[]) AND n.state IN ('dead', 'delivered') AND NOT ${NEWER_EXISTS}
), start AS (
  SELECT c.subscription_id,
         greatest(now(), (SELECT max(p.next_attempt_at) FROM notification p
                           WHERE p.subscription_id = c.subscription_id AND p.state = 'pending' AND p.replay_count > 0)) AS at
    FROM (SELECT DISTINCT subscription_id FROM chosen) c
), replayed AS (
  UPDATE notification n
     SET state = 'pending', failing_since = NULL, replay_count = n.replay_count + 1,
         next_attempt_at = s.at + (c.ord - 1) * (1000.0 / $2) * interval '1 millisecond'
    FROM chosen c JOIN start s ON s.subscription_id = c.subscription_id
   WHERE n.id = c.id
  RETURNING n.id
), letters AS (
  UPDATE dead_letter SET replayed_at = now(), replay_count = replay_count + 1
   WHERE kind = 'notification' AND replayed_at IS NULL AND payload ->> 'notificationId' IN (SELECT id FROM replayed)
)
SELECT id FROM replayed`;

@Injectable()
export class NotificationHistoryRepository {
  constructor(private readonly database: DatabaseService) {}

  /** Newest first. */
  async list(filter: { subscriptionId?: string; state?: NotificationState; limit: number }): Promise<NotificationSummary[]> {
    const { rows } = await this.database.pool.query<NotificationSummary>(
      `SELECT ${COLUMNS} FROM notification n
        WHERE ($1::uuid IS NULL OR n.subscription_id = $1) AND ($2::text IS NULL OR n.state = $2)
        ORDER BY n.created_at DESC, n.id LIMIT $3`,
      [filter.subscriptionId ?? null, filter.state ?? null, filter.limit],
    );
    return rows;
  }

  async get(id: string): Promise<NotificationDetail | undefined> {
    const { rows } = await this.database.pool.query<NotificationDetail>(
      `SELECT ${COLUMNS}, n.data,
              coalesce((SELECT json_agg(json_build_object('attemptedAt', a.attempted_at, 'durationMs', a.duration_ms,
                                          'statusCode', a.status_code, 'outcome', a.outcome, 'error', a.error,
                                          'replay', a.replay) ORDER BY a.id)
                          FROM notification_attempt a WHERE a.notification_id = n.id), '[]') AS "attemptHistory"
         FROM notification n WHERE n.id = $1`,
      [id],
    );
    return rows[0];
  }

  /** The id of a newer version of the same resource for the same subscription, if there is one. */
  async newerThan(id: string): Promise<string | undefined> {
    const { rows } = await this.database.pool.query<{ id: string }>(
      `SELECT m.id FROM notification n JOIN notification m
          ON m.subscription_id = n.subscription_id AND m.resource_key = n.resource_key AND m.sequence > n.sequence
         AND m.state <> 'cancelled'
        WHERE n.id = $1 ORDER BY m.sequence DESC LIMIT 1`,
      [id],
    );
    return rows[0]?.id;
  }

  /** What a bulk replay of a subscription would take. */
  async replayable(subscriptionId: string, since: Date, source: ReplaySource): Promise<string[]> {
    const { rows } = await this.database.pool.query<{ id: string }>(REPLAYABLE, [subscriptionId, since, source]);
    return rows.map((r) => r.id);
  }

  /** Makes these notifications due again, throttled per subscriber; answers the ids that were. */
  async replay(ids: string[], perSecond: number): Promise<string[]> {
    const { rows } = await this.database.pool.query<{ id: string }>(REPLAY, [ids, perSecond]);
    return rows.map((r) => r.id);
  }
}
