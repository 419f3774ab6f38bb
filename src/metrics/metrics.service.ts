import { Injectable } from '@nestjs/common';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { DatabaseService } from '../database/database.service';

export type WebhookOutcome = 'accepted' | 'duplicate' | 'test' | 'spooled' | 'rejected';
export type ReconcileJobOutcome = 'written' | 'stale' | 'deleted' | 'skipped' | 'postponed' | 'failed' | 'dead_lettered';
export type SavedReason = 'coalesced' | 'skipped';

// Figures only the database knows, read on each scrape (one statement), so every replica reports the same.
const DATABASE_GAUGES = `
SELECT
  (SELECT (extract(epoch FROM now() - min(requested_at)))::float8 FROM reconcile_request WHERE due_at IS NOT NULL) AS reconcile_lag,
  (SELECT count(*) FROM reconcile_request WHERE due_at IS NOT NULL)::int AS reconcile_pending,
  (SELECT count(*) FROM dead_letter WHERE kind = 'reconcile' AND replayed_at IS NULL AND resolved_at IS NULL)::int AS dead_reconcile,
  (SELECT count(*) FROM dead_letter WHERE kind = 'notification' AND replayed_at IS NULL AND resolved_at IS NULL)::int AS dead_notification,
  (SELECT count(*) FROM notification WHERE state = 'pending')::int AS notifications_pending,
  (SELECT (extract(epoch FROM now() - min(created_at)))::float8 FROM notification WHERE state = 'pending') AS notification_lag,
  (SELECT count(*) FROM subscription WHERE paused_at IS NOT NULL AND deleted_at IS NULL)::int AS paused_subscriptions`;

interface DatabaseGauges {
  reconcile_lag: number | null;
  reconcile_pending: number;
  dead_reconcile: number;
  dead_notification: number;
  notifications_pending: number;
  notification_lag: number | null;
  paused_subscriptions: number;
}

/**
 * Every Prometheus metric of the service, on a registry of its own (several services can share a process in
 * tests), served by GET /metrics. Counters are this process's; gauges read from the database describe the whole
 * deployment; spool gauges are this replica's (each has its own spool).
 */
@Injectable()
export class MetricsService {
  readonly registry = new Registry();

  readonly webhooksReceived = new Counter({
    name: 'pozy_sync_webhooks_received_total',
    help: 'Deliveries to POST /webhooks/pozy, by outcome; rejected ones by reason (the error code answered)',
    labelNames: ['outcome', 'reason'] as const,
    registers: [this.registry],
  });

  readonly receiveDuration = new Histogram({
    name: 'pozy_sync_webhook_receive_duration_seconds',
    help: 'Time from a delivery arriving to its answer (Pozy gives up after 5 s)',
    labelNames: ['status'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });

  readonly reconcileJobs = new Counter({
    name: 'pozy_sync_reconcile_jobs_total',
    help: 'Reconcile jobs run, by outcome',
    labelNames: ['resource', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly pozyRequests = new Counter({
    name: 'pozy_sync_pozy_api_requests_total',
    help: "Requests to Pozy's API, by route and HTTP status (none: no answer, e.g. a timeout)",
    labelNames: ['route', 'status'] as const,
    registers: [this.registry],
  });

  readonly apiCallsSaved = new Counter({
    name: 'pozy_sync_pozy_api_calls_saved_total',
    help: 'Pozy reads not made that one read per event would have made: events that joined a pending read (coalesced), reads skipped because the mirror already reflected the events (skipped)',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  readonly backfillRuns = new Counter({
    name: 'pozy_sync_backfill_runs_total',
    help: 'Backfill runs finished by this process, by status',
    labelNames: ['status'] as const,
    registers: [this.registry],
  });

  readonly backfillRecovered = new Counter({
    name: 'pozy_sync_backfill_events_recovered_total',
    help: "Events found in Pozy's delivery logs that had never reached us, stored by a backfill",
    registers: [this.registry],
  });

  readonly notificationAttempts = new Counter({
    name: 'pozy_sync_notification_attempts_total',
    help: 'Attempts to deliver change notifications, by outcome (delivered, retry, dead: moved to the dead-letter queue)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly notificationDuration = new Histogram({
    name: 'pozy_sync_notification_attempt_duration_seconds',
    help: "Time a subscriber took to answer a notification (or the attempt's timeout)",
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });

  readonly budgetWait = new Histogram({
    name: 'pozy_sync_pozy_budget_wait_seconds',
    help: "Time a request to Pozy waited for the deployment's shared budget, by lane (realtime, operator, backfill, bulk)",
    labelNames: ['lane'] as const,
    buckets: [0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [this.registry],
  });

  readonly budgetPauses = new Counter({
    name: 'pozy_sync_pozy_rate_limit_pauses_total',
    help: 'Times Pozy answered 429 and every replica paused its requests until Retry-After',
    registers: [this.registry],
  });

  readonly sweepItems = new Counter({
    name: 'pozy_sync_sweep_items_total',
    help: 'Posts and accounts the import and the full sweep compared with Pozy, by run kind, resource and outcome (created, changed, deleted, unchanged)',
    labelNames: ['kind', 'resource', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly sweepPages = new Counter({
    name: 'pozy_sync_sweep_pages_total',
    help: 'List pages the import and the full sweep read from Pozy, by run kind',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });

  private readonly mirrorLag = this.gauge('pozy_sync_mirror_lag_seconds', 'Age of the oldest pending reconcile read (0 when none): how far behind Pozy the mirror may be');
  private readonly pendingReads = this.gauge('pozy_sync_reconcile_pending', 'Resources waiting for a read from Pozy');
  private readonly deadLetters = this.gauge('pozy_sync_dead_letters', 'Dead letters neither replayed nor resolved, by queue and kind (ack: this replica\'s spool)', ['queue', 'kind']);
  private readonly spooled = this.gauge('pozy_sync_spool_events', "Events in this replica's acknowledgment spool waiting for the database", []);
  private readonly notificationsPending = this.gauge('pozy_sync_notifications_pending', 'Change notifications waiting to be delivered');
  private readonly notificationLag = this.gauge('pozy_sync_notification_lag_seconds', 'Age of the oldest pending change notification (0 when none)');
  private readonly pausedSubscriptions = this.gauge('pozy_sync_subscriptions_paused', "Subscriptions paused by the circuit breaker");

  constructor(private readonly database: DatabaseService) {
    collectDefaultMetrics({ register: this.registry, prefix: 'pozy_sync_' });
  }

  /** The Prometheus text exposition, with the database and spool gauges read now. */
  async render(spool: { pending: number; dead: number }): Promise<string> {
    const { rows } = await this.database.pool.query<DatabaseGauges>(DATABASE_GAUGES);
    const g = rows[0];
    this.mirrorLag.set(g.reconcile_lag ?? 0);
    this.pendingReads.set(g.reconcile_pending);
    this.deadLetters.set({ queue: 'delivery', kind: 'reconcile' }, g.dead_reconcile);
    this.deadLetters.set({ queue: 'delivery', kind: 'notification' }, g.dead_notification);
    this.deadLetters.set({ queue: 'ack', kind: 'event' }, spool.dead);
    this.spooled.set(spool.pending);
    this.notificationsPending.set(g.notifications_pending);
    this.notificationLag.set(g.notification_lag ?? 0);
    this.pausedSubscriptions.set(g.paused_subscriptions);
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  private gauge(name: string, help: string, labelNames: string[] = []): Gauge {
    return new Gauge({ name, help, labelNames, registers: [this.registry] });
  }
}
