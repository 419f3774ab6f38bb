import { Injectable } from '@nestjs/common';
import { DatabaseService } from '../database/database.service';
import { isoSql } from './outbox-sql';

/** A pending notification whose time has come, as the deliverer sends it. */
export interface DueNotification {
  id: string;
  type: string;
  resourceKey: string;
  sequence: number;
  createdAt: Date;
  data: unknown;
  attempts: number;
  failingSince: Date | null;
  replay: boolean;
}

/** What one attempt came to, as the deliverer decided. */
export interface AttemptRecord {
  id: string;
  attemptedAt: Date;
  durationMs: number;
  statusCode: number | null;
  outcome: 'delivered' | 'retry' | 'dead';
  error: string | null;
  /** For `retry`. */
  nextAttemptAt: Date | null;
  /** Since when attempts have kept timing out or finding the endpoint unreachable (null: the last one did not). */
  failingSince: Date | null;
  /** For `dead`: why it went to the dead-letter queue. */
  reason: string | null;
  replay: boolean;
}

export interface Lease {
  id: string;
  url: string;
  secret: string;
}

export interface SubscriberHealth {
  /** Set when this batch paused the subscription. */
  pausedAt: Date | null;
  /** False once the lease was lost (deleted, deactivated, or taken over after expiring). */
  leaseHeld: boolean;
}

// Per resource, only the newest notification is sent: older pending ones are superseded, so a subscriber never
// gets an older version after a newer one (cancelled ones, of a deleted subscription, do not count).
const NEWER_EXISTS = `
EXISTS (SELECT 1 FROM notification m
         WHERE m.subscription_id = n.subscription_id AND m.resource_key = n.resource_key
           AND m.sequence > n.sequence AND m.state <> 'cancelled')`;

const SUPERSEDE = `
UPDATE notification n SET state = 'superseded', next_attempt_at = NULL
 WHERE n.subscription_id = $1 AND n.state = 'pending' AND ${NEWER_EXISTS}`;

const TAKE_DUE = `
SELECT n.id, n.type, n.resource_key AS "resourceKey", n.sequence, n.created_at AS "createdAt", n.data, n.attempts,
       n.failing_since AS "failingSince", n.replay_count > 0 AS replay
  FROM notification n
 WHERE n.subscription_id = $1 AND n.next_attempt_at <= now() AND n.state = 'pending' AND NOT ${NEWER_EXISTS}
 ORDER BY n.next_attempt_at, n.id
 LIMIT $2`;

// Subscriptions with due notifications that no live worker is sending: each is taken by one worker at a time.
const LEASE_DUE = `
UPDATE subscription s SET lease_owner = $1, lease_until = now() + $2 * interval '1 millisecond'
  FROM (SELECT c.id FROM subscription c
         WHERE c.active AND c.deleted_at IS NULL AND c.paused_at IS NULL
           AND (c.lease_until IS NULL OR c.lease_until < now()) AND NOT (c.id = ANY ($3::uuid[]))
           AND EXISTS (SELECT 1 FROM notification n WHERE n.subscription_id = c.id AND n.next_attempt_at <= now())
         LIMIT $4 FOR UPDATE SKIP LOCKED) due
 WHERE s.id = due.id
RETURNING s.id, s.url, s.secret`;

// One statement per batch: the notifications' new states, every attempt, the dead letters, and the subscriber's
// health (the circuit breaker pauses it once every attempt has failed for $4 ms), which also renews the lease.
const RECORD = `
WITH r AS (
  SELECT * FROM json_to_recordset($1::json) AS r(id text, attempted_at timestamptz, duration_ms int, status_code int,
    outcome text, error text, next_attempt_at timestamptz, failing_since timestamptz, reason text, replay boolean)
), updated AS (
  UPDATE notification n
     SET state = CASE r.outcome WHEN 'retry' THEN 'pending' ELSE r.outcome END, attempts = n.attempts + 1,
         next_attempt_at = r.next_attempt_at, failing_since = r.failing_since, last_error = r.error,
         delivered_at = CASE WHEN r.outcome = 'delivered' THEN r.attempted_at ELSE n.delivered_at END
    FROM r
   WHERE n.id = r.id AND n.state = 'pending'
  RETURNING n.id
), attempts AS (
  INSERT INTO notification_attempt (notification_id, subscription_id, attempted_at, duration_ms, status_code, outcome, error, replay)
  SELECT r.id, $2, r.attempted_at, r.duration_ms, r.status_code, r.outcome, r.error, r.replay FROM r
), letters AS (
  INSERT INTO dead_letter (id, queue, kind, resource_key, payload, reason, error, attempts, first_failure_at, last_failure_at)
  SELECT gen_random_uuid(), 'delivery', 'notification', n.resource_key,
         jsonb_build_object('notificationId', n.id, 'subscriptionId', n.subscription_id, 'type', n.type, 'sequence', n.sequence),
         r.reason, r.error, n.attempts + 1, coalesce(n.failing_since, r.attempted_at), r.attempted_at
    FROM r JOIN updated u ON u.id = r.id JOIN notification n ON n.id = r.id
   WHERE r.outcome = 'dead'
), obsolete AS (
  -- A newer version of the resource reached the subscriber: its older dead-lettered ones need no replay any more.
  UPDATE notification o SET state = 'superseded'
    FROM r JOIN updated u ON u.id = r.id JOIN notification n ON n.id = r.id
   WHERE r.outcome = 'delivered' AND o.subscription_id = n.subscription_id AND o.resource_key = n.resource_key
     AND o.sequence < n.sequence AND o.state = 'dead'
  RETURNING o.id
), resolved AS (
  UPDATE dead_letter SET resolved_at = now(), resolution = 'superseded: the subscriber received a newer version'
   WHERE kind = 'notification' AND replayed_at IS NULL AND resolved_at IS NULL
     AND payload ->> 'notificationId' IN (SELECT id FROM obsolete)
), outcome AS (
  SELECT max(attempted_at) FILTER (WHERE outcome = 'delivered') AS last_success,
         min(attempted_at) FILTER (WHERE outcome <> 'delivered') AS first_failure,
         max(attempted_at) FILTER (WHERE outcome <> 'delivered') AS last_failure,
         (array_agg(error ORDER BY attempted_at DESC) FILTER (WHERE outcome <> 'delivered'))[1] AS last_error
    FROM r
), health AS (
  -- Failing continuously: no success, and no quiet gap longer than retries leave ($6 ms) since the last failure,
  -- so one failure after an idle hour does not count the hour.
  SELECT o.*, CASE WHEN o.last_success IS NOT NULL OR o.first_failure IS NULL THEN NULL
                   WHEN s.failing_since IS NULL OR s.last_failure_at < o.first_failure - $6 * interval '1 millisecond'
                   THEN o.first_failure
                   ELSE s.failing_since END AS failing_since
    FROM outcome o, subscription s
   WHERE s.id = $2
), breaker AS (
  SELECT h.*, s.paused_at IS NULL AND h.failing_since < now() - $4 * interval '1 millisecond' AS trips
    FROM health h, subscription s
   WHERE s.id = $2
)
UPDATE subscription s
   SET last_success_at = coalesce(h.last_success, s.last_success_at),
       last_failure_at = coalesce(h.last_failure, s.last_failure_at),
       last_error = coalesce(h.last_error, s.last_error),
       failing_since = h.failing_since,
       paused_at = CASE WHEN h.trips THEN now() ELSE s.paused_at END,
       paused_reason = CASE WHEN h.trips THEN 'every attempt failed since ' || ${isoSql('h.failing_since')} || ': ' || h.last_error
                            ELSE s.paused_reason END,
       lease_until = CASE WHEN s.lease_owner = $3 THEN now() + $5 * interval '1 millisecond' ELSE s.lease_until END
  FROM breaker h
 WHERE s.id = $2
RETURNING s.paused_at AS "pausedAt", s.lease_owner = $3 AND s.active AND s.deleted_at IS NULL AS "leaseHeld"`;

/** The outbox as the delivery worker uses it. */
@Injectable()
export class NotificationRepository {
  constructor(private readonly database: DatabaseService) {}

  /** Takes up to `limit` subscriptions with due notifications for this worker, for `leaseMs`. */
  async leaseDue(owner: string, leaseMs: number, excluded: string[], limit: number): Promise<Lease[]> {
    const { rows } = await this.database.pool.query<Lease>(LEASE_DUE, [owner, leaseMs, excluded, limit]);
    return rows;
  }

  async release(subscriptionId: string, owner: string): Promise<void> {
    await this.database.pool.query(
      'UPDATE subscription SET lease_owner = NULL, lease_until = NULL WHERE id = $1 AND lease_owner = $2',
      [subscriptionId, owner],
    );
  }

  /** The next due notifications of a subscription, at most one per resource (its newest). */
  async takeDue(subscriptionId: string, limit: number): Promise<DueNotification[]> {
    await this.database.pool.query(SUPERSEDE, [subscriptionId]);
    const { rows } = await this.database.pool.query<DueNotification>(TAKE_DUE, [subscriptionId, limit]);
    return rows;
  }

  async record(
    subscriptionId: string,
    owner: string,
    records: AttemptRecord[],
    /** `quietGapMs`: a pause in failures longer than this (retries are closer) starts a new run of failures. */
    options: { pauseAfterMs: number; leaseMs: number; quietGapMs: number },
  ): Promise<SubscriberHealth> {
    const json = records.map((r) => ({
      id: r.id,
      attempted_at: r.attemptedAt,
      duration_ms: r.durationMs,
      status_code: r.statusCode,
      outcome: r.outcome,
      error: r.error,
      next_attempt_at: r.nextAttemptAt,
      failing_since: r.failingSince,
      reason: r.reason,
      replay: r.replay,
    }));
    const { rows } = await this.database.pool.query<SubscriberHealth>(RECORD, [
      JSON.stringify(json),
      subscriptionId,
      owner,
      options.pauseAfterMs,
      options.leaseMs,
      options.quietGapMs,
    ]);
    return rows[0] ?? { pausedAt: null, leaseHeld: false };
  }
}
