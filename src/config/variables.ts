import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { readAllowedHosts } from './allowed-hosts';
import {
  adminToken,
  allowedHosts,
  combinationProblems,
  ConfigError,
  cron,
  databaseUrl,
  describe,
  encryptionKeys,
  httpUrl,
  integer,
  KEY_VALUE_PAIRS,
  Kind,
  LOG_FORMATS,
  LOG_LEVELS,
  OTLP_PROTOCOLS,
  oneOf,
  optionalHttpUrl,
  optionalMatching,
  optionalOneOf,
  optionalText,
  parseEncryptionKeys,
  readTokensOf,
  reserve,
  reserveShare,
  ROLES,
  text,
  tokenList,
  TRACE_SAMPLERS,
  webhookSecrets,
} from './environment';

/** The groups of AppConfig a variable's value may sit in (`config.pozy.timeoutMs`). */
type Group = 'pozy' | 'retention' | 'notify';

/** One variable, declared once: what it accepts, what it means, and where AppConfig holds its value. */
export interface Declared<T, F extends string | null, G extends Group | null, R> {
  readonly kind: Kind<T>;
  /** One line of Markdown: what the variable does (docs/configuration.md's "meaning"). */
  readonly meaning: string;
  /** Its value is a secret: never logged, never echoed in a startup message. */
  readonly secret: boolean;
  /** What unset means, when there is no default (docs/configuration.md's "default"). */
  readonly unset: string | null;
  /** A word on the default, after it. */
  readonly note: string | null;
  /** The AppConfig property holding the value (in `group` when set); null: AppConfig derives what it needs itself. */
  readonly field: F;
  readonly group: G;
  /** The validated value as AppConfig holds it. */
  readonly read: (value: T) => R;
}

function variable<T, const F extends string | null = null, const G extends Group | null = null, R = T>(spec: {
  kind: Kind<T>;
  meaning: string;
  secret?: boolean;
  unset?: string;
  note?: string;
  field?: F;
  group?: G;
  read?: (value: T) => R;
}): Declared<T, F, G, R> {
  return {
    kind: spec.kind,
    meaning: spec.meaning,
    secret: spec.secret ?? false,
    unset: spec.unset ?? null,
    note: spec.note ?? null,
    field: (spec.field ?? null) as F,
    group: (spec.group ?? null) as G,
    read: spec.read ?? ((value: T) => value as unknown as R),
  };
}

const offAsNull = (value: string): string | null => (value === 'off' ? null : value);
const withoutTrailingSlash = (url: string): string => url.replace(/\/+$/, '');

/**
 * Every environment variable the service reads, each declared once. Validation (and its startup messages), AppConfig's
 * typed values and docs/configuration.md (`npm run docs:config`) all come from here. The order is the order of the
 * startup messages and of the docs' table.
 */
export const VARIABLES = {
  NODE_ENV: variable({
    kind: optionalOneOf(['development', 'production', 'test'] as const),
    meaning:
      '`production` requires `POZY_WEBHOOK_SECRET`, `SECRETS_ENCRYPTION_KEY`, `API_TOKENS` (or `API_TOKENS=none`), and `DATABASE_URL` unless `EMBEDDED_DATABASE=allow`, and refuses the secrets this repository publishes as examples (see [Security](security.md))',
    unset: '`development`',
    field: 'nodeEnv',
    read: (value) => value ?? 'development',
  }),
  PORT: variable({ kind: integer(3000, 0, 65535), meaning: 'HTTP port', field: 'port' }),
  ROLE: variable({
    kind: oneOf(ROLES, 'all'),
    meaning: '`all` (HTTP and jobs), `api` (HTTP only), `worker` (jobs and schedules; its port serves only `/health/*` and `/metrics`)',
    field: 'role',
  }),
  LOG_LEVEL: variable({ kind: oneOf(LOG_LEVELS, 'log'), meaning: 'the least severe level logged; each includes those before it', field: 'logLevel' }),
  LOG_FORMAT: variable({
    kind: oneOf(LOG_FORMATS, 'auto'),
    meaning: '`json` (one object a line), `pretty` (readable), `auto` (pretty in a terminal, JSON otherwise)',
    field: 'logFormat',
  }),
  HOST: variable({ kind: text('0.0.0.0'), meaning: 'HTTP interface', field: 'host' }),
  DATABASE_URL: variable({
    kind: databaseUrl(),
    meaning:
      'PostgreSQL; several hosts (`postgresql://h1:5432,h2:5432/db`) are tried in order as libpq does, and a connection is kept only on a server that takes writes (`target_session_attrs=read-write`, the default here; see [Failover](operations.md#failover))',
    secret: true,
    unset: 'embedded PostgreSQL under `.data/postgres`',
    field: 'databaseUrl',
  }),
  DATABASE_READ_URL: variable({
    kind: databaseUrl(),
    meaning:
      "a streaming replica of `DATABASE_URL`'s server (the same database name): `GET /posts`, `GET /accounts` (and their `/:id`), `GET /changes` and `/changes/head` read from it unless asked for `consistency=strong` (see [Read replicas](operations.md#read-replicas)); several hosts as in `DATABASE_URL`, with `target_session_attrs` `any` (the default here), `standby`, `prefer-standby` or another of libpq's; `ROLE=worker` ignores it",
    secret: true,
    unset: 'every read on the primary',
    field: 'databaseReadUrl',
  }),
  MIGRATE_ON_START: variable({
    kind: oneOf(['true', 'false'] as const, 'true', 'MIGRATE_ON_START must be true or false'),
    meaning:
      '`true`: each process applies pending migrations as it starts (one at a time, under a lock); `false`: migrations are a step of their own (`npm run migrate`, a Kubernetes Job) and a process that finds one pending waits, not ready, naming it (see [Upgrades](operations.md#upgrades)); requires `DATABASE_URL`',
    field: 'migrateOnStart',
    read: (value) => value === 'true',
  }),
  MIGRATION_LOCK_TIMEOUT_MS: variable({
    kind: integer(5_000, 100, 600_000),
    meaning:
      "a migration's statement that waits longer than this for a lock gives up (so it never queues the service's writes behind it for longer) and is tried again up to 5 times, 1, 2, 4, 8 and 16 s later",
    field: 'migrationLockTimeoutMs',
  }),
  BACKGROUND_MIGRATION_BATCH_SIZE: variable({
    kind: integer(1_000, 10, 100_000),
    meaning:
      "rows a background data migration changes per transaction (a release's change to every row of a table, run by one worker after the migrations; see [Upgrades](operations.md#upgrades)); after each batch it rests as long as the batch took, so it never takes more than half of one connection",
    field: 'backgroundMigrationBatchSize',
  }),
  EMBEDDED_DATABASE_PORT: variable({ kind: integer(54329, 1, 65535), meaning: 'port of the embedded PostgreSQL', field: 'embeddedDatabasePort' }),
  EMBEDDED_DATABASE: variable({
    kind: optionalOneOf(['allow'] as const, 'EMBEDDED_DATABASE must be "allow" or unset'),
    meaning: '`allow`: with `NODE_ENV=production` and no `DATABASE_URL`, keep production data in the embedded PostgreSQL anyway',
    unset: 'production refuses to start without `DATABASE_URL`',
  }),
  LOGICAL_PUBLICATION: variable({
    kind: optionalMatching(
      /^[a-z_][a-z0-9_]{0,62}$/,
      'LOGICAL_PUBLICATION must be a PostgreSQL identifier: lowercase letters, digits and underscores, not starting with a digit, at most 63 characters',
      'lowercase PostgreSQL identifier',
    ),
    meaning:
      "a PostgreSQL publication of the mirror's `post` and `account` tables, made (or its table list set back) at boot, for Debezium, Sequin or any logical replication consumer. Needs `wal_level=logical` on the server (otherwise a warning, and the service runs) and a user owning the tables; `/health/ready` shows its state. See `docs/cdc.md`",
    unset: 'no publication',
    field: 'logicalPublication',
    read: (value) => value ?? null,
  }),
  POZY_API_URL: variable({
    kind: httpUrl('https://api.pozy.ai'),
    meaning: 'Pozy base URL',
    field: 'apiUrl',
    group: 'pozy',
    read: withoutTrailingSlash,
  }),
  POZY_API_KEY: variable({
    kind: optionalText(),
    meaning:
      'Pozy Bearer key of the `default` workspace; unset: the service starts with no workspace and waits for `POST /admin/workspaces` (see [Workspaces](getting-started.md#workspaces))',
    secret: true,
    unset: 'no workspace',
    field: 'apiKey',
    group: 'pozy',
    read: (value) => value ?? '',
  }),
  PUBLIC_URL: variable({
    kind: optionalHttpUrl('PUBLIC_URL must be an http(s) URL'),
    meaning:
      "the service's externally reachable base URL: with it, `POST /admin/workspaces` makes each workspace's webhook subscription in Pozy (`PUBLIC_URL/webhooks/pozy/<id>`) and keeps it healthy",
    unset: 'no managed subscriptions',
    field: 'publicUrl',
    read: (value) => (value === undefined ? null : withoutTrailingSlash(value)),
  }),
  IMPORT_CONCURRENCY: variable({
    kind: integer(4, 1, 64),
    meaning:
      'imports of new workspaces running at once across every replica; the rest wait in the order they were added, `queued` with their position',
    field: 'importConcurrency',
  }),
  WEBHOOK_HEALTH_CHECK_MS: variable({
    kind: integer(60_000, 1_000),
    meaning: 'how often one worker checks each managed webhook subscription in Pozy, turns an inactive one on again and backfills the gap',
    field: 'webhookHealthCheckMs',
  }),
  POZY_WEBHOOK_SECRET: variable({
    kind: webhookSecrets(),
    meaning:
      'HMAC secret for `X-Pozy-Signature`; two, comma-separated, while you rotate it in Pozy (a delivery signed with either is accepted; see [Security](security.md)). A secret cannot hold a comma',
    secret: true,
    unset: 'unsigned webhooks accepted (warning at boot); required when `NODE_ENV=production`',
    field: 'webhookSecrets',
    group: 'pozy',
    read: (value): readonly string[] => Object.freeze(value?.split(',') ?? []),
  }),
  SECRETS_ENCRYPTION_KEY: variable({
    kind: encryptionKeys(),
    meaning:
      'keys that encrypt subscription secrets in the database (AES-256-GCM), the newest first. The newest encrypts, every one decrypts; a key id is 1 to 32 letters, digits, `_` or `-` (see [Security](security.md))',
    secret: true,
    unset: 'secrets stored in plaintext (warning at boot); required when `NODE_ENV=production`',
    field: 'secretsEncryptionKeys',
    read: (value) => Object.freeze(parseEncryptionKeys(value)),
  }),
  POZY_TIMEOUT_MS: variable({ kind: integer(10_000, 100, 120_000), meaning: 'timeout of one request to Pozy', field: 'timeoutMs', group: 'pozy' }),
  POZY_RATE_LIMIT_PER_MINUTE: variable({
    kind: integer(600, 1, 100_000),
    meaning:
      'requests a minute the whole deployment (every replica together) makes to Pozy at most: one budget, shared through PostgreSQL (see [One Pozy budget](getting-started.md#one-pozy-budget-per-api-key))',
    field: 'rateLimitPerMinute',
    group: 'pozy',
  }),
  POZY_RATE_LIMIT_WINDOW_MS: variable({
    kind: integer(60_000, 1_000, 3_600_000),
    meaning: 'the window the budget is counted over, as Pozy counts its own: a sliding minute (change it only to test)',
    field: 'rateLimitWindowMs',
    group: 'pozy',
  }),
  POZY_RATE_LIMIT_RESERVE: variable({
    kind: reserve('20%'),
    meaning: "share of Pozy's advertised limit (`X-RateLimit-Limit`) left to the API key's other users while its headers show them using it",
    field: 'rateLimitReserve',
    group: 'pozy',
    read: reserveShare,
  }),
  INITIAL_IMPORT: variable({
    kind: oneOf(['auto', 'off'] as const, 'auto', 'INITIAL_IMPORT must be auto or off'),
    meaning:
      '`auto`: the first worker to start against a database where no import or sweep ever completed imports the whole workspace from Pozy (see [The first start](getting-started.md#the-first-start-against-your-workspace)); `off`: never',
    field: 'initialImport',
    read: (value) => value === 'auto',
  }),
  POZY_MAX_RETRIES: variable({
    kind: integer(4, 0, 10),
    meaning: 'retries of one request (429 after `Retry-After`, 5xx, resets, timeouts) before the job fails and is retried with backoff',
    field: 'maxRetries',
    group: 'pozy',
  }),
  POZY_MAX_PAUSE_MS: variable({
    kind: integer(120_000, 1_000, 3_600_000),
    meaning:
      "the longest a `429` (its `Retry-After`, else `X-RateLimit-Reset`), or headers saying Pozy's window is spent, may pause every replica; a longer wait is cut to this, and logged with what Pozy sent (see [Security](security.md))",
    note: "two of Pozy's sliding minutes",
    field: 'maxPauseMs',
    group: 'pozy',
  }),
  POZY_MAX_RESPONSE_BYTES: variable({
    kind: integer(16_777_216, 65_536, 268_435_456),
    meaning:
      'the most of one Pozy answer read; a larger one is cut off there, unread, and fails its request as an answer retrying cannot change (see [Security](security.md))',
    note: '16 MiB: about 24 pages of 500 posts',
    field: 'maxResponseBytes',
    group: 'pozy',
  }),
  RECONCILE_CLOCK_SKEW_MS: variable({
    kind: integer(5_000, 0, 600_000),
    meaning:
      "an event is already reflected when the resource's last read began this much after the event's timestamp, plus the skew measured against Pozy's clock (see [Clocks and lagging reads](getting-started.md#clocks-and-lagging-reads))",
    field: 'reconcileClockSkewMs',
  }),
  EVENT_MAX_FUTURE_MS: variable({
    kind: integer(600_000, 0, 86_400_000),
    meaning:
      "an event whose `timestamp` is further than this ahead of the server's clock is refused (`400 invalid_event` naming `timestamp`): it would stay the resource's latest event and turn the skip rule off for it",
    note: '10 minutes',
    field: 'eventMaxFutureMs',
  }),
  READ_LAG_GRACE_MS: variable({
    kind: integer(10_000, 0, 600_000),
    meaning:
      "a `404` (or an account missing from its profile's list) that contradicts an event received less than this long ago is read again with backoff before it is believed (see [Clocks and lagging reads](getting-started.md#clocks-and-lagging-reads)); `0`: believed at once",
    field: 'readLagGraceMs',
  }),
  DEAD_LETTER_AFTER_MS: variable({
    kind: integer(60_000, 0, 86_400_000),
    meaning:
      'timeouts lasting this long across retries move a reconcile (Pozy unreachable) or a notification (subscriber unreachable) to the delivery dead-letter queue, or a spooled event (database unreachable) to the acknowledgment one',
    field: 'deadLetterAfterMs',
  }),
  ADMIN_TOKEN: variable({
    kind: adminToken(),
    meaning:
      'Bearer token for `/admin/*`; it also reads (`API_TOKENS`). One token of letters, digits and `-._~+/`, in every environment (`openssl rand -hex 24`)',
    secret: true,
    unset: 'admin endpoints answer 403',
    field: 'adminToken',
  }),
  API_TOKENS: variable({
    kind: tokenList(),
    meaning:
      'read tokens, comma-separated (two at once to rotate, see [Read tokens](consuming.md#read-tokens)): `GET /posts`, `/accounts` and `/changes` then need `Authorization: Bearer <one of them, or ADMIN_TOKEN>`. Letters, digits and `-._~+/` only (no spaces, no empty entries), none equal to `ADMIN_TOKEN`. `none`: the query endpoints open, by choice. Tokens scoped to workspaces are made with `POST /admin/tokens` instead, with no restart',
    secret: true,
    unset:
      'the query endpoints are open to anyone who reaches the port (warning at boot) until a token made with `POST /admin/tokens` is live; required when `NODE_ENV=production` (`none` to keep them open)',
    field: 'readTokens',
    read: (value): readonly string[] => Object.freeze(readTokensOf(value)),
  }),
  STATUS_PUBLIC: variable({
    kind: oneOf(['true', 'false'] as const, 'true', 'STATUS_PUBLIC must be true or false'),
    meaning:
      '`true`: the status page (`GET /`) and `GET /sync/status` also answer without a token, then without resource ids or error texts; `false`: they need a read token too (requires `API_TOKENS`)',
    field: 'statusPublic',
    read: (value) => value === 'true',
  }),
  STATUS_CACHE_MS: variable({
    kind: integer(1_000, 0, 60_000),
    meaning:
      'one reading of the status figures (`GET /`, `GET /sync/status`, the `/metrics` gauges) answers every caller for this long, so any number of callers costs one reading per interval (see [Security](security.md)); `0`: only callers arriving while it is read share it',
    field: 'statusCacheMs',
  }),
  BACKFILL_CRON: variable({
    kind: cron('* * * * *'),
    meaning: 'schedule of the backfill',
    note: 'every minute',
    field: 'backfillCron',
    read: offAsNull,
  }),
  BACKFILL_OVERLAP_MS: variable({
    kind: integer(600_000, 0, 86_400_000),
    meaning: "how far before the last run's newest log row the next run starts reading (log rows can be written late)",
    field: 'backfillOverlapMs',
  }),
  SWEEP_CRON: variable({
    kind: cron('off'),
    meaning: 'schedule of the full sweep (one replica at a time); `off`: only on request',
    field: 'sweepCron',
    read: offAsNull,
  }),
  EVENT_RETENTION_DAYS: variable({
    kind: integer(30, 7, 3650, {
      minMessage:
        "EVENT_RETENTION_DAYS must be at least 7: Pozy's guide asks to keep event ids at least a few days, so that its redeliveries stay deduplicated",
    }),
    meaning:
      "events received longer ago than this are deleted, and with the same window notification history (final states only, never `pending` or `dead`), finished backfill runs (never the checkpoint) and dead-letter replay runs, replayed dead letters and permanently failed jobs. At least a week: a redelivery of a deleted event is stored again as new, and Pozy's webhook guide asks to keep event ids a few days so redeliveries stay deduplicated (`docs/pozy-api.md`). An event whose `timestamp` is older than this less one day is refused (`400 invalid_event` naming `timestamp`; see [Security](security.md))",
    field: 'eventRetentionDays',
    group: 'retention',
  }),
  CHANGE_RETENTION_DAYS: variable({
    kind: integer(7, 1, 3650),
    meaning:
      'how long the change feed (`GET /changes`) keeps an entry (the newest is always kept); a cursor older than that answers `410 cursor_expired`',
    field: 'changeRetentionDays',
    group: 'retention',
  }),
  HISTORY_RETENTION_DAYS: variable({
    kind: integer(30, 1, 3650),
    meaning:
      "how long posts' and accounts' versions (`GET /posts/:id/history`, `?asOf=`; see [A post's history](consuming.md#a-posts-history)) are kept: a version superseded longer ago (by a newer one read before the cutoff) is pruned; each post's and account's newest stays however old. A version costs about 1.5 kB on disk for a typical 1.1 kB post (1.56 GB a million changes, indexes included; measured in `test/history-query-plans.e2e-spec.ts`), so the default keeps a month of changes at that rate",
    field: 'historyRetentionDays',
    group: 'retention',
  }),
  CONSUMER_MAX_LAG_DAYS: variable({
    kind: integer(7, 1, 3650),
    meaning:
      'how far behind a named consumer (`POST /admin/consumers`) may fall while retention keeps the feed\'s entries it has not committed, even past `CHANGE_RETENTION_DAYS`; once its oldest uncommitted entry is older, retention marks it `expired` (`ops.consumer.expired`, `pozy_sync_consumers{status="expired"}`) and its next read answers `410 cursor_expired`. The default, a week, outlasts a long weekend of a stopped consumer while bounding what one forgotten consumer can make the feed keep',
    field: 'consumerMaxLagDays',
    group: 'retention',
  }),
  RETENTION_CRON: variable({
    kind: cron('17 * * * *'),
    meaning: 'schedule of the retention prune (one replica at a time, on replicas running jobs); `off`: only on request',
    note: 'hourly',
    field: 'cron',
    group: 'retention',
    read: offAsNull,
  }),
  RETENTION_BATCH_SIZE: variable({
    kind: integer(1_000, 10, 100_000),
    meaning: 'rows the prune deletes per statement, so no statement holds locks for long',
    field: 'batchSize',
    group: 'retention',
  }),
  SPOOL_DIR: variable({
    kind: text('.data/spool'),
    meaning:
      'local spool and acknowledgment dead letters (SQLite); give each replica its own, on a persistent volume. Made `0700`, its files `0600` (see [Security](security.md))',
    field: 'spoolDir',
  }),
  DATABASE_POOL_SIZE: variable({ kind: integer(20, 1, 200), meaning: 'PostgreSQL connections per process', field: 'databasePoolSize' }),
  DATABASE_READ_POOL_SIZE: variable({
    kind: integer(10, 1, 200),
    meaning: 'connections per process to the read replica, apart from `DATABASE_POOL_SIZE`',
    field: 'databaseReadPoolSize',
  }),
  DATABASE_QUERY_POOL_SIZE: variable({
    kind: integer(5, 1, 200),
    meaning:
      "connections per process of the query endpoints (`GET /posts`, `/accounts`, `/changes` and their `/:id`, `/head`) to the primary, apart from `DATABASE_POOL_SIZE`, so that slow reads never take the receiver's and the worker's; a read that finds none free within 2 s answers `503 overloaded` (see [Security](security.md))",
    field: 'databaseQueryPoolSize',
  }),
  QUERY_STATEMENT_TIMEOUT_MS: variable({
    kind: integer(5_000, 10, 600_000),
    meaning:
      'every statement of the query endpoints, on the primary and on the read replica, is stopped after this long and the read answers `503 query_timeout` (see [Security](security.md))',
    field: 'queryStatementTimeoutMs',
  }),
  CHANGES_MAX_WAITERS: variable({
    kind: integer(1_000, 1, 100_000),
    meaning: 'long polls (`GET /changes?wait=`) one process holds at once; past it, `503 too_many_waiters` (see [Security](security.md))',
    field: 'changesMaxWaiters',
  }),
  ACK_TIMEOUT_MS: variable({
    kind: integer(2_000, 100, 4_500),
    meaning: "the database must acknowledge an event's insert within this, or the event is spooled (Pozy waits 5 s)",
    field: 'ackTimeoutMs',
  }),
  SPOOL_RETRY_FIRST_MS: variable({
    kind: integer(10_000, 10, 86_400_000),
    meaning: 'a spooled event is retried this long after it was spooled',
    field: 'spoolRetryFirstMs',
  }),
  SPOOL_RETRY_SECOND_MS: variable({
    kind: integer(1_200_000, 10, 86_400_000),
    meaning: 'then at this interval',
    field: 'spoolRetrySecondMs',
  }),
  RECONCILE_COALESCE_WINDOW_MS: variable({
    kind: integer(1_000, 0, 60_000),
    meaning: 'least time between two reads of one resource from Pozy: a burst of events inside it shares one more read',
    field: 'reconcileCoalesceWindowMs',
  }),
  WORKER_CONCURRENCY: variable({ kind: integer(10, 1, 100), meaning: 'jobs run at once per process', field: 'workerConcurrency' }),
  SHUTDOWN_GRACE_MS: variable({
    kind: integer(10_000, 0, 600_000),
    meaning: 'how long running jobs may finish on SIGTERM before they are released',
    field: 'shutdownGraceMs',
  }),
  SHUTDOWN_DRAIN_MS: variable({
    kind: integer(1_000, 0, 60_000),
    meaning: 'on SIGTERM, how long readiness fails (while requests are still answered) before the server stops accepting',
    field: 'shutdownDrainMs',
  }),
  HEAP_GROWTH_PERCENT: variable({
    kind: integer(50, 0, 400),
    meaning:
      "while the process starts and while an import or a sweep runs in it, how far V8's heap may grow past what its last full collection kept before the next one, in percent (src/runs/tight-heap.ts): a page allocates megabytes that die at once, so the default keeps the process near what it holds (a 100,000-post import peaked at about 330 MB under V8's own rule, about 210 MB at 50); outside runs, and with `0`, V8's own rule",
    field: 'heapGrowthPercent',
  }),
  NOTIFY_TIMEOUT_MS: variable({
    kind: integer(10_000, 100, 120_000),
    meaning: 'timeout of one attempt to deliver a change notification',
    field: 'timeoutMs',
    group: 'notify',
  }),
  NOTIFY_CONCURRENCY: variable({
    kind: integer(8, 1, 100),
    meaning: 'notifications in flight to one subscriber at once',
    field: 'concurrency',
    group: 'notify',
  }),
  NOTIFY_RETRY_BASE_MS: variable({
    kind: integer(1_000, 10, 3_600_000),
    meaning:
      'retry *n* of a notification waits between half and all of base × 2^(n−1), at most `NOTIFY_RETRY_MAX_MS` (and at least a `Retry-After`, up to a day)',
    field: 'retryBaseMs',
    group: 'notify',
  }),
  NOTIFY_RETRY_MAX_MS: variable({
    kind: integer(300_000, 10, 86_400_000),
    meaning: 'the longest wait before a retry of a notification',
    field: 'retryMaxMs',
    group: 'notify',
  }),
  NOTIFY_PAUSE_AFTER_MS: variable({
    kind: integer(900_000, 1_000, 604_800_000),
    meaning: 'a subscriber whose every attempt has failed for this long is paused (circuit breaker) until resumed',
    field: 'pauseAfterMs',
    group: 'notify',
  }),
  NOTIFY_REPLAY_PER_SECOND: variable({
    kind: integer(10, 1, 10_000),
    meaning: 'replayed notifications are spread to at most this many a second per subscriber',
    field: 'replayPerSecond',
    group: 'notify',
  }),
  NOTIFY_ALLOWED_HOSTS: variable({
    kind: allowedHosts(),
    meaning:
      "internal subscribers a team allows (see [Security](security.md)): host names as written in a subscription's URL (exactly; no wildcards), IP addresses, CIDRs (`receiver.internal,10.20.0.0/16,fd00::/8`)",
    unset: 'loopback, private, link-local and other internal addresses are refused',
    field: 'allowedHosts',
    group: 'notify',
    read: (value) => {
      const allowed = readAllowedHosts(value);
      return Object.freeze({ names: allowed.names, ranges: allowed.ranges });
    },
  }),
  FRESHNESS_OBJECTIVE_MS: variable({
    kind: integer(5_000, 100, 3_600_000),
    meaning:
      'a read from Pozy owed longer than this breaches the freshness objective: `ops.objective.breached` is sent, and `ops.objective.recovered` once the oldest owed read is back under half of it (see [Operational webhooks](consuming.md#operational-webhooks))',
    field: 'freshnessObjectiveMs',
  }),
  NOTIFICATION_OBJECTIVE_MS: variable({
    kind: integer(2_000, 100, 3_600_000),
    meaning:
      'a change notification owed to a healthy subscriber (at its first attempt) longer than this after its write breaches the notification objective: `ops.objective.breached` is sent, and `ops.objective.recovered` once the oldest such notification is back under half of it (see [Operational webhooks](consuming.md#operational-webhooks))',
    field: 'notificationObjectiveMs',
  }),
  OTEL_EXPORTER_OTLP_ENDPOINT: variable({
    kind: optionalHttpUrl('OTEL_EXPORTER_OTLP_ENDPOINT must be an http(s) URL'),
    meaning: "a trace collector's OTLP/HTTP base URL (`/v1/traces` is appended; see [Traces](operations.md#traces))",
    unset: 'no traces, the SDK is not loaded',
  }),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: variable({
    kind: optionalHttpUrl('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT must be an http(s) URL'),
    meaning: 'the traces URL itself, as written (wins over `OTEL_EXPORTER_OTLP_ENDPOINT`)',
    unset: '`OTEL_EXPORTER_OTLP_ENDPOINT`',
  }),
  OTEL_EXPORTER_OTLP_PROTOCOL: variable({
    kind: oneOf(OTLP_PROTOCOLS, 'http/protobuf', `OTEL_EXPORTER_OTLP_PROTOCOL must be one of ${OTLP_PROTOCOLS.join(', ')} (gRPC is not supported)`),
    meaning: 'OTLP over HTTP, as protobuf or JSON (gRPC is not supported)',
  }),
  OTEL_EXPORTER_OTLP_HEADERS: variable({
    kind: optionalMatching(
      KEY_VALUE_PAIRS,
      'OTEL_EXPORTER_OTLP_HEADERS must be comma-separated key=value pairs',
      '`key=value` pairs, comma-separated',
    ),
    meaning: "sent with every export (a collector's API key, say); values may be URL-encoded",
    secret: true,
    unset: 'none',
  }),
  OTEL_SERVICE_NAME: variable({ kind: text('pozy-sync'), meaning: "the spans' `service.name`" }),
  OTEL_RESOURCE_ATTRIBUTES: variable({
    kind: optionalMatching(KEY_VALUE_PAIRS, 'OTEL_RESOURCE_ATTRIBUTES must be comma-separated key=value pairs', '`key=value` pairs, comma-separated'),
    meaning: "added to every span's resource (`deployment.environment=prod`)",
    unset: 'none',
  }),
  OTEL_TRACES_SAMPLER: variable({
    kind: oneOf(TRACE_SAMPLERS, 'parentbased_always_on', `OTEL_TRACES_SAMPLER must be one of ${TRACE_SAMPLERS.join(', ')}`),
    meaning: 'which spans are kept',
  }),
  OTEL_TRACES_SAMPLER_ARG: variable({
    kind: optionalMatching(/^(0(\.\d+)?|1(\.0+)?)$/, 'OTEL_TRACES_SAMPLER_ARG must be a ratio from 0 to 1', '`0` to `1`'),
    meaning: 'the ratio of the `*traceidratio` samplers',
    unset: '`1`',
  }),
  OTEL_BSP_SCHEDULE_DELAY: variable({
    kind: integer(5_000, 10, 600_000),
    meaning: "the most ms between a span's end and its export (in batches)",
  }),
} as const;

type Variables = typeof VARIABLES;
export type VariableName = keyof Variables;
type ValueOf<D> = D extends Declared<infer T, string | null, Group | null, unknown> ? T : never;

/** The validated environment: each variable's value, typed by its declaration. */
export type Environment = { readonly [K in VariableName]: ValueOf<Variables[K]> };

type FieldsOf<G extends Group | null> = {
  readonly [
    K in VariableName as Variables[K]['group'] extends G ? (Variables[K]['field'] extends string ? Variables[K]['field'] : never) : never
  ]: ReturnType<Variables[K]['read']>;
};

/** AppConfig's properties that hold one variable's value each, typed by its declaration's `read`. */
export type DeclaredConfig = FieldsOf<null> & {
  readonly pozy: FieldsOf<'pozy'>;
  readonly retention: FieldsOf<'retention'>;
  readonly notify: FieldsOf<'notify'>;
};

const NAMES = Object.keys(VARIABLES) as VariableName[];

/** The class class-validator reads: one field per variable, its declaration's decorators applied as if written on it. */
export class EnvironmentVariables {
  constructor() {
    for (const name of NAMES) {
      const value = VARIABLES[name].kind.default;
      if (value !== undefined) Object.assign(this, { [name]: value });
    }
  }
}
for (const name of NAMES) {
  // Property decorators run bottom to top.
  for (const decorator of [...VARIABLES[name].kind.decorators].reverse()) decorator(EnvironmentVariables.prototype, name);
}

/** Validates the raw environment; throws a ConfigError naming every bad variable. */
export function validateEnvironment(env: Record<string, string | undefined>): Environment {
  // Only our own keys: the rest of the environment is none of our business (and may hold secrets).
  const relevant = Object.fromEntries(NAMES.filter((key) => env[key] !== undefined).map((key) => [key, env[key]]));
  const parsed = plainToInstance(EnvironmentVariables, relevant, { exposeDefaultValues: true }) as unknown as Environment;
  const problems = [...describe(validateSync(parsed, { forbidUnknownValues: true, stopAtFirstError: true })), ...combinationProblems(parsed)];
  if (problems.length > 0) throw new ConfigError(problems);
  return parsed;
}

/** The values AppConfig holds for the variables that declare a `field`. */
export function declaredConfig(env: Environment): DeclaredConfig {
  const top: Record<string, unknown> = {};
  const groups: Record<Group, Record<string, unknown>> = { pozy: {}, retention: {}, notify: {} };
  for (const name of NAMES) {
    const declared: Declared<unknown, string | null, Group | null, unknown> = VARIABLES[name] as never;
    if (declared.field === null) continue;
    (declared.group === null ? top : groups[declared.group])[declared.field] = declared.read(env[name]);
  }
  return {
    ...top,
    pozy: Object.freeze(groups.pozy),
    retention: Object.freeze(groups.retention),
    notify: Object.freeze(groups.notify),
  } as DeclaredConfig;
}
