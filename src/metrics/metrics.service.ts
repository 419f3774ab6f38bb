import { Injectable } from '@nestjs/common';
import { collectDefaultMetrics, Counter, type CounterConfiguration, Gauge, Histogram, Registry } from 'prom-client';

/** For the latencies an objective is written over: fine below its thresholds (2 s, 5 s), coarse past them. */
const FRESHNESS_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300];

/** A gauge a capability publishes: read when /metrics is scraped. */
export interface GaugeDefinition {
  name: string;
  help: string;
  labelNames?: readonly string[];
}

/**
 * Every Prometheus metric of the service, on a registry of its own (several services can share a process in
 * tests), served by GET /metrics. It knows no capability: each publishes into it. Counters are this process's;
 * gauges are read when scraped, by the capability that owns the figure, from the place its status is read too
 * (health/status-metrics.ts: the database's figures, the whole deployment's; receive/spool-metrics.ts: this
 * replica's spool).
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

  readonly pozyRequestDuration = new Histogram({
    name: 'pozy_sync_pozy_api_request_duration_seconds',
    help: "Time Pozy's API took to answer a request (the budget's wait not included), by route and HTTP status (none: no answer)",
    labelNames: ['route', 'status'] as const,
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });

  /** The mirror's freshness: what the first objective is written over (docs/operations.md, "Objectives and alerts"). */
  readonly eventToMirror = new Histogram({
    name: 'pozy_sync_event_to_mirror_seconds',
    help: "Time from the first event of a pending read arriving to the read's write committing (the mirror reflecting it), by the type of the resource's latest event",
    labelNames: ['type'] as const,
    buckets: FRESHNESS_BUCKETS,
    registers: [this.registry],
  });

  readonly writeToNotification = new Histogram({
    name: 'pozy_sync_write_to_notification_seconds',
    help: 'Time from a mirror write committing to its change notification being delivered, by subscriber health (healthy: delivered at its first attempt; retried: after failed ones)',
    labelNames: ['subscriber'] as const,
    buckets: FRESHNESS_BUCKETS,
    registers: [this.registry],
  });

  readonly writeToFeed = new Histogram({
    name: 'pozy_sync_write_to_feed_position_seconds',
    help: 'Time from a mirror write committing to its change-feed entry getting its position (readable by GET /changes)',
    buckets: FRESHNESS_BUCKETS,
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

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'pozy_sync_' });
    // Gauges named like counters, which `promtool check metrics` flags; each is the sum of the same name without
    // `_total` (by type), which stays.
    for (const name of ['handles', 'requests', 'resources']) this.registry.removeSingleMetric(`pozy_sync_nodejs_active_${name}_total`);
  }

  /** The Prometheus text exposition: every published gauge is read now. */
  render(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** A counter a capability owns and counts into. */
  counter<L extends string>(configuration: Omit<CounterConfiguration<L>, 'registers'>): Counter<L> {
    return new Counter<L>({ ...configuration, registers: [this.registry] });
  }

  /**
   * A gauge a capability publishes itself, read when scraped: `collect` sets its values (from the database, say),
   * so /metrics needs to know nothing of that capability.
   */
  publishGauge<L extends string>(name: string, help: string, labelNames: readonly L[], collect: (gauge: Gauge<L>) => Promise<void>): void {
    new Gauge<L>({
      name,
      help,
      labelNames,
      registers: [this.registry],
      async collect() {
        await collect(this);
      },
    });
  }

  /**
   * Gauges read together: `collect` sets all of them, once per scrape however many there are (a scrape asks every
   * gauge at once, and they share the read in flight).
   */
  publishGauges<K extends string>(definitions: Record<K, GaugeDefinition>, collect: (gauges: Record<K, Gauge>) => Promise<void>): void {
    let reading: Promise<void> | undefined;
    const collectOnce = (): Promise<void> =>
      (reading ??= collect(gauges).finally(() => {
        reading = undefined;
      }));
    const gauges = {} as Record<K, Gauge>;
    for (const key of Object.keys(definitions) as K[]) {
      const { name, help, labelNames = [] } = definitions[key];
      gauges[key] = new Gauge({ name, help, labelNames, registers: [this.registry], collect: collectOnce });
    }
  }
}
