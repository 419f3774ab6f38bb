import { LogLevel } from '@nestjs/common';
import { AllowedHosts, readAllowedHosts } from './allowed-hosts';
import {
  EncryptionKey,
  EnvironmentVariables,
  keyValuePairs,
  LOG_LEVELS,
  LogFormat,
  LogLevelName,
  OPEN_READS,
  parseEncryptionKeys,
  readTokensOf,
  reserveShare,
  OtlpProtocol,
  RoleName,
  TraceSamplerName,
  validateEnvironment,
} from './environment';

export interface TracingConfig {
  /** The traces URL itself (`…/v1/traces`). */
  readonly url: string;
  readonly protocol: OtlpProtocol;
  readonly headers: Readonly<Record<string, string>>;
  readonly serviceName: string;
  readonly resourceAttributes: Readonly<Record<string, string>>;
  readonly sampler: TraceSamplerName;
  /** The ratio of the traceidratio samplers. */
  readonly samplerRatio: number;
  readonly scheduleDelayMs: number;
}

function tracingOf(env: EnvironmentVariables): TracingConfig | null {
  const url =
    env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? (env.OTEL_EXPORTER_OTLP_ENDPOINT && `${env.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/+$/, '')}/v1/traces`);
  if (!url) return null;
  return Object.freeze({
    url,
    protocol: env.OTEL_EXPORTER_OTLP_PROTOCOL,
    headers: Object.freeze(Object.fromEntries(keyValuePairs(env.OTEL_EXPORTER_OTLP_HEADERS))),
    serviceName: env.OTEL_SERVICE_NAME,
    resourceAttributes: Object.freeze(Object.fromEntries(keyValuePairs(env.OTEL_RESOURCE_ATTRIBUTES))),
    sampler: env.OTEL_TRACES_SAMPLER,
    samplerRatio: env.OTEL_TRACES_SAMPLER_ARG === undefined ? 1 : Number(env.OTEL_TRACES_SAMPLER_ARG),
    scheduleDelayMs: env.OTEL_BSP_SCHEDULE_DELAY,
  });
}

/**
 * The service's configuration, validated once at boot. Inject this class; nothing else reads process.env.
 */
export class AppConfig {
  readonly nodeEnv: 'development' | 'production' | 'test';
  readonly port: number;
  readonly host: string;
  readonly role: RoleName;
  readonly logLevel: LogLevelName;
  /** LOG_LEVEL and every level above it. */
  readonly logLevels: LogLevel[];
  readonly logFormat: LogFormat;
  /** Unset means "start the embedded PostgreSQL"; main.ts then builds the config again with its URL. */
  readonly databaseUrl: string | undefined;
  readonly embeddedDatabasePort: number;
  readonly databasePoolSize: number;
  /** A streaming replica the query endpoints read from; undefined: every read goes to the primary. */
  readonly databaseReadUrl: string | undefined;
  /** The publication the service keeps for logical replication (docs/cdc.md); null: none. */
  readonly logicalPublication: string | null;
  /** Connections of the read pool (the replica's), apart from DATABASE_POOL_SIZE. */
  readonly databaseReadPoolSize: number;
  /** Connections of the query endpoints on the primary, apart from DATABASE_POOL_SIZE (see database/query-pool.ts). */
  readonly databaseQueryPoolSize: number;
  /** Every statement of the query endpoints, on the primary or the replica, is cut after this long. */
  readonly queryStatementTimeoutMs: number;
  /** Long polls of GET /changes waiting at once in this process at most. */
  readonly changesMaxWaiters: number;
  readonly pozy: {
    readonly apiUrl: string;
    readonly apiKey: string;
    /** POZY_WEBHOOK_SECRET: one, or two while rotating (a delivery signed with either is accepted); empty: unsigned accepted. */
    readonly webhookSecrets: readonly string[];
    /** Per request, from connecting to the last byte. */
    readonly timeoutMs: number;
    /** Requests per window the whole deployment may make, all replicas together (Pozy's limit is 60 to 1,200 by plan). */
    readonly rateLimitPerMinute: number;
    /** The window the budget is counted over: Pozy's sliding minute (shorter only in tests). */
    readonly rateLimitWindowMs: number;
    /** Share of Pozy's advertised limit left to the key's other users while they use it. */
    readonly rateLimitReserve: number;
    /** Retries of one request (429, 5xx, resets, timeouts) before the job itself fails and retries later. */
    readonly maxRetries: number;
    /** The longest a 429's Retry-After (or X-RateLimit-Reset) may pause every replica. */
    readonly maxPauseMs: number;
    /** Bytes of one answer read at most; past them the answer is cut off and its request fails. */
    readonly maxResponseBytes: number;
  };
  /** An event is already reflected when the mirror's last read began this much after its timestamp. */
  readonly reconcileClockSkewMs: number;
  /** An event whose timestamp is further than this ahead of our clock is refused (400). */
  readonly eventMaxFutureMs: number;
  /**
   * A 404 (or an account missing from its profile's list) that contradicts an event received less than this long
   * ago is read again with backoff before it is believed: Pozy's reads can lag its writes.
   */
  readonly readLagGraceMs: number;
  /**
   * Timeouts or an unreachable endpoint persisting this long move a reconcile (Pozy) or a notification (a
   * subscriber) to the delivery dead-letter queue.
   */
  readonly deadLetterAfterMs: number;
  /** SECRETS_ENCRYPTION_KEY: the newest (first) encrypts subscription secrets, every one decrypts; empty: stored in plaintext. */
  readonly secretsEncryptionKeys: readonly EncryptionKey[];
  readonly adminToken: string | undefined;
  /** API_TOKENS: any of them (or ADMIN_TOKEN) reads; none (unset, or `none`) leaves the query endpoints open. */
  readonly readTokens: readonly string[];
  /** `API_TOKENS=none`: the query endpoints are open by the operator's choice, not for want of a setting. */
  readonly openReadsChosen: boolean;
  /** The status page and /sync/status answer anonymous requests too, without resource ids or error texts. */
  readonly statusPublic: boolean;
  /** A reading of the status figures is answered to every caller for this long (0: only to those who asked meanwhile). */
  readonly statusCacheMs: number;
  /** null: no scheduled backfill (`BACKFILL_CRON=off`). */
  readonly backfillCron: string | null;
  /** How far before the last run's newest log row the next run starts: log rows can be written late. */
  readonly backfillOverlapMs: number;
  /** Schedule of the full sweep; null (the default): only on request. */
  readonly sweepCron: string | null;
  /** Import the whole workspace on the first start against a database that has never completed one. */
  readonly initialImport: boolean;
  /** Imports of new workspaces running at once across every replica. */
  readonly importConcurrency: number;
  /** The service's externally reachable base URL, without a trailing slash (managed webhooks); null when unset. */
  readonly publicUrl: string | null;
  readonly webhookHealthCheckMs: number;
  readonly retention: {
    /** Events, notification history, backfill runs, replayed dead letters and failed jobs older than this are pruned. */
    readonly eventRetentionDays: number;
    /** The change feed's entries older than this are pruned (GET /changes answers 410 for a cursor before them). */
    readonly changeRetentionDays: number;
    /** Posts' and accounts' versions superseded longer ago than this are pruned; each one's newest is kept. */
    readonly historyRetentionDays: number;
    /** Retention keeps the entries an active named consumer has not committed, up to this many days old; older, it expires. */
    readonly consumerMaxLagDays: number;
    /** null: pruned only on request (`RETENTION_CRON=off`). */
    readonly cron: string | null;
    /** Rows deleted per statement, so pruning never holds many row locks for long. */
    readonly batchSize: number;
  };
  readonly spoolDir: string;
  /** The database must acknowledge an event's insert within this (Pozy waits 5 s), or the event is spooled. */
  readonly ackTimeoutMs: number;
  /** A spooled event is retried this long after it was spooled, then `spoolRetrySecondMs` after that. */
  readonly spoolRetryFirstMs: number;
  readonly spoolRetrySecondMs: number;
  /** Least time between two reads of one resource: a burst of events inside it shares one more read. */
  readonly reconcileCoalesceWindowMs: number;
  readonly workerConcurrency: number;
  readonly shutdownGraceMs: number;
  /** On SIGTERM, readiness fails this long before the server stops accepting, so load balancers move traffic away. */
  readonly shutdownDrainMs: number;
  readonly notify: {
    /** Per attempt, from connecting to the end of the answer. */
    readonly timeoutMs: number;
    /** Notifications in flight to one subscriber at a time. */
    readonly concurrency: number;
    /** Retries wait up to base * 2^(attempt-1), at most max, with full jitter (and at least a Retry-After). */
    readonly retryBaseMs: number;
    readonly retryMaxMs: number;
    /** A subscriber whose every attempt has failed for this long is paused (the circuit breaker). */
    readonly pauseAfterMs: number;
    /** Replayed notifications are spread to at most this many a second per subscriber. */
    readonly replayPerSecond: number;
    /** Loopback, private and other internal addresses subscriptions may point at all the same (none by default). */
    readonly allowedHosts: AllowedHosts;
  };

  /** A read owed longer than this breaches the freshness objective (told as ops.objective.breached, then .recovered). */
  readonly freshnessObjectiveMs: number;
  /**
   * A change notification owed to a healthy subscriber, at its first attempt, longer than this after its write breaches
   * the notification objective (told likewise).
   */
  readonly notificationObjectiveMs: number;
  /** Where and how spans are exported; null (no OTLP endpoint set): tracing is off and no exporter starts. */
  readonly tracing: TracingConfig | null;

  private constructor(env: EnvironmentVariables) {
    this.nodeEnv = (env.NODE_ENV as AppConfig['nodeEnv'] | undefined) ?? 'development';
    this.port = env.PORT;
    this.host = env.HOST;
    this.role = env.ROLE;
    this.logLevel = env.LOG_LEVEL;
    this.logLevels = LOG_LEVELS.slice(0, LOG_LEVELS.indexOf(env.LOG_LEVEL) + 1);
    this.logFormat = env.LOG_FORMAT;
    this.databaseUrl = env.DATABASE_URL;
    this.embeddedDatabasePort = env.EMBEDDED_DATABASE_PORT;
    this.databasePoolSize = env.DATABASE_POOL_SIZE;
    this.databaseReadUrl = env.DATABASE_READ_URL;
    this.logicalPublication = env.LOGICAL_PUBLICATION ?? null;
    this.databaseReadPoolSize = env.DATABASE_READ_POOL_SIZE;
    this.databaseQueryPoolSize = env.DATABASE_QUERY_POOL_SIZE;
    this.queryStatementTimeoutMs = env.QUERY_STATEMENT_TIMEOUT_MS;
    this.changesMaxWaiters = env.CHANGES_MAX_WAITERS;
    this.pozy = Object.freeze({
      apiUrl: env.POZY_API_URL.replace(/\/+$/, ''),
      apiKey: env.POZY_API_KEY ?? '',
      webhookSecrets: Object.freeze(env.POZY_WEBHOOK_SECRET?.split(',') ?? []),
      timeoutMs: env.POZY_TIMEOUT_MS,
      rateLimitPerMinute: env.POZY_RATE_LIMIT_PER_MINUTE,
      rateLimitWindowMs: env.POZY_RATE_LIMIT_WINDOW_MS,
      rateLimitReserve: reserveShare(env.POZY_RATE_LIMIT_RESERVE),
      maxRetries: env.POZY_MAX_RETRIES,
      maxPauseMs: env.POZY_MAX_PAUSE_MS,
      maxResponseBytes: env.POZY_MAX_RESPONSE_BYTES,
    });
    this.reconcileClockSkewMs = env.RECONCILE_CLOCK_SKEW_MS;
    this.eventMaxFutureMs = env.EVENT_MAX_FUTURE_MS;
    this.readLagGraceMs = env.READ_LAG_GRACE_MS;
    this.deadLetterAfterMs = env.DEAD_LETTER_AFTER_MS;
    this.secretsEncryptionKeys = Object.freeze(parseEncryptionKeys(env.SECRETS_ENCRYPTION_KEY));
    this.adminToken = env.ADMIN_TOKEN;
    this.readTokens = Object.freeze(readTokensOf(env));
    this.openReadsChosen = env.API_TOKENS === OPEN_READS;
    this.statusPublic = env.STATUS_PUBLIC === 'true';
    this.statusCacheMs = env.STATUS_CACHE_MS;
    this.backfillCron = env.BACKFILL_CRON === 'off' ? null : env.BACKFILL_CRON;
    this.backfillOverlapMs = env.BACKFILL_OVERLAP_MS;
    this.sweepCron = env.SWEEP_CRON === 'off' ? null : env.SWEEP_CRON;
    this.initialImport = env.INITIAL_IMPORT === 'auto';
    this.importConcurrency = env.IMPORT_CONCURRENCY;
    this.publicUrl = env.PUBLIC_URL?.replace(/\/+$/, '') ?? null;
    this.webhookHealthCheckMs = env.WEBHOOK_HEALTH_CHECK_MS;
    this.retention = Object.freeze({
      eventRetentionDays: env.EVENT_RETENTION_DAYS,
      changeRetentionDays: env.CHANGE_RETENTION_DAYS,
      historyRetentionDays: env.HISTORY_RETENTION_DAYS,
      consumerMaxLagDays: env.CONSUMER_MAX_LAG_DAYS,
      cron: env.RETENTION_CRON === 'off' ? null : env.RETENTION_CRON,
      batchSize: env.RETENTION_BATCH_SIZE,
    });
    this.spoolDir = env.SPOOL_DIR;
    this.ackTimeoutMs = env.ACK_TIMEOUT_MS;
    this.spoolRetryFirstMs = env.SPOOL_RETRY_FIRST_MS;
    this.spoolRetrySecondMs = env.SPOOL_RETRY_SECOND_MS;
    this.reconcileCoalesceWindowMs = env.RECONCILE_COALESCE_WINDOW_MS;
    this.workerConcurrency = env.WORKER_CONCURRENCY;
    this.shutdownGraceMs = env.SHUTDOWN_GRACE_MS;
    this.shutdownDrainMs = env.SHUTDOWN_DRAIN_MS;
    const allowed = readAllowedHosts(env.NOTIFY_ALLOWED_HOSTS);
    this.notify = Object.freeze({
      timeoutMs: env.NOTIFY_TIMEOUT_MS,
      concurrency: env.NOTIFY_CONCURRENCY,
      retryBaseMs: env.NOTIFY_RETRY_BASE_MS,
      retryMaxMs: env.NOTIFY_RETRY_MAX_MS,
      pauseAfterMs: env.NOTIFY_PAUSE_AFTER_MS,
      replayPerSecond: env.NOTIFY_REPLAY_PER_SECOND,
      allowedHosts: Object.freeze({ names: allowed.names, ranges: allowed.ranges }),
    });
    this.freshnessObjectiveMs = env.FRESHNESS_OBJECTIVE_MS;
    this.notificationObjectiveMs = env.NOTIFICATION_OBJECTIVE_MS;
    this.tracing = tracingOf(env);
    Object.freeze(this);
  }

  /** Throws ConfigError naming every invalid variable. */
  static fromEnvironment(env: Record<string, string | undefined>): AppConfig {
    return new AppConfig(validateEnvironment(env));
  }

  /** Whether this process runs jobs and schedules (roles `all` and `worker`). */
  get runsWorker(): boolean {
    return this.role !== 'api';
  }

  /** Whether this process serves the API (roles `all` and `api`); a worker serves only health and metrics. */
  get servesHttp(): boolean {
    return this.role !== 'worker';
  }

  /** A copy pointing at another database (the embedded one, once it is running). */
  withDatabaseUrl(databaseUrl: string): AppConfig {
    const copy = Object.create(AppConfig.prototype) as AppConfig;
    return Object.freeze(Object.assign(copy, this, { databaseUrl }));
  }

  /** The database URL, for code that runs only once one has been resolved. */
  requireDatabaseUrl(): string {
    if (!this.databaseUrl) throw new Error('No database URL: the embedded PostgreSQL was not started');
    return this.databaseUrl;
  }
}
