import { Injectable } from '@nestjs/common';
import { DatabaseService } from '../database/database.service';
import { Subscription, SubscriptionRepository } from '../notifications/subscription.repository';
import { AckSpool } from '../webhooks/ack-spool';

export interface SyncStatus {
  queue: { pendingReads: number; oldestPendingAgeMs: number | null; jobs: number; failingJobs: number };
  events: { received: number; lastHour: number; lastReceivedAt: Date | null };
  mirror: { posts: number; deletedPosts: number; accounts: number; removedAccounts: number; lastSyncedAt: Date | null };
  /** Dead letters not replayed yet, by queue. */
  deadLetters: { delivery: number; ack: number };
  /** Events this replica's local spool holds, waiting for the database. */
  spool: { pending: number };
  backfill: {
    lastRun: { id: string; status: string; startedAt: Date; finishedAt: Date | null; eventsRecovered: number; error: string | null } | null;
    /** Events Pozy logged that never reached us (found by the backfill), by the hour they happened: the last 48 h. */
    gaps: Array<{ hour: Date; events: number }>;
  };
  /** Change notifications: waiting to be sent, and each subscriber's health (paused ones are the circuit breaker's). */
  notifications: {
    pending: number;
    oldestPendingAgeMs: number | null;
    /** `origin` only (scheme, host, port): this is public, and a URL's path or query may hold a subscriber's token. */
    subscribers: Array<Pick<Subscription, 'id' | 'active' | 'health'> & { origin: string }>;
  };
}

const LAST_RUN = `
SELECT id, status, started_at AS "startedAt", finished_at AS "finishedAt", events_recovered AS "eventsRecovered", error
  FROM backfill_run ORDER BY started_at DESC LIMIT 1`;

const GAPS = `
SELECT date_trunc('hour', "timestamp") AS hour, count(*)::int AS events
  FROM pozy_event
 WHERE recovered_by IS NOT NULL AND "timestamp" > now() - interval '48 hours'
 GROUP BY 1 ORDER BY 1`;

const STATUS = `
SELECT
  (SELECT count(*) FROM reconcile_request WHERE due_at IS NOT NULL)::int AS pending_reads,
  (SELECT (extract(epoch FROM now() - min(requested_at)) * 1000)::bigint FROM reconcile_request WHERE due_at IS NOT NULL) AS oldest_ms,
  (SELECT count(*) FROM graphile_worker._private_jobs)::int AS jobs,
  (SELECT count(*) FROM graphile_worker._private_jobs WHERE last_error IS NOT NULL)::int AS failing_jobs,
  (SELECT count(*) FROM pozy_event)::int AS received,
  (SELECT count(*) FROM pozy_event WHERE received_at > now() - interval '1 hour')::int AS last_hour,
  (SELECT max(received_at) FROM pozy_event) AS last_received_at,
  (SELECT count(*) FILTER (WHERE deleted_at IS NULL) FROM post)::int AS posts,
  (SELECT count(*) FILTER (WHERE deleted_at IS NOT NULL) FROM post)::int AS deleted_posts,
  (SELECT count(*) FILTER (WHERE removed_at IS NULL) FROM account)::int AS accounts,
  (SELECT count(*) FILTER (WHERE removed_at IS NOT NULL) FROM account)::int AS removed_accounts,
  (SELECT count(*) FROM dead_letter WHERE queue = 'delivery' AND replayed_at IS NULL AND resolved_at IS NULL)::int AS dead_delivery,
  greatest((SELECT max(synced_at) FROM post), (SELECT max(synced_at) FROM account)) AS last_synced_at,
  (SELECT count(*) FROM notification WHERE state = 'pending')::int AS pending_notifications,
  (SELECT (extract(epoch FROM now() - min(created_at)) * 1000)::bigint FROM notification WHERE state = 'pending') AS oldest_notification_ms`;

/** How far behind the mirror is, from the database alone: GET /sync/status and the status page share it. */
@Injectable()
export class SyncStatusService {
  constructor(
    private readonly database: DatabaseService,
    private readonly spool: AckSpool,
    private readonly subscriptions: SubscriptionRepository,
  ) {}

  async status(): Promise<SyncStatus> {
    const [{ rows }, lastRun, gaps, subscriptions] = await Promise.all([
      this.database.pool.query<Record<string, number | string | Date | null>>(STATUS),
      this.database.pool.query<SyncStatus['backfill']['lastRun'] & object>(LAST_RUN),
      this.database.pool.query<{ hour: Date; events: number }>(GAPS),
      this.subscriptions.list(),
    ]);
    const r = rows[0];
    const spool = this.spool.counts();
    return {
      queue: {
        pendingReads: Number(r.pending_reads),
        oldestPendingAgeMs: r.oldest_ms === null ? null : Number(r.oldest_ms),
        jobs: Number(r.jobs),
        failingJobs: Number(r.failing_jobs),
      },
      events: { received: Number(r.received), lastHour: Number(r.last_hour), lastReceivedAt: r.last_received_at as Date | null },
      mirror: {
        posts: Number(r.posts),
        deletedPosts: Number(r.deleted_posts),
        accounts: Number(r.accounts),
        removedAccounts: Number(r.removed_accounts),
        lastSyncedAt: r.last_synced_at as Date | null,
      },
      deadLetters: { delivery: Number(r.dead_delivery), ack: spool.dead },
      spool: { pending: spool.pending },
      backfill: { lastRun: lastRun.rows[0] ?? null, gaps: gaps.rows },
      notifications: {
        pending: Number(r.pending_notifications),
        oldestPendingAgeMs: r.oldest_notification_ms === null ? null : Number(r.oldest_notification_ms),
        subscribers: subscriptions.map(({ id, url, active, health }) => ({ id, origin: new URL(url).origin, active, health })),
      },
    };
  }
}
