import { plainToInstance, Transform } from 'class-transformer';
import {
  IsIn,
  IsInt,
  IsNotEmpty,
  IsOptional,
  IsString,
  IsUrl,
  Matches,
  Max,
  Min,
  Validate,
  validateSync,
  ValidationArguments,
  ValidationError,
  ValidatorConstraint,
  ValidatorConstraintInterface,
} from 'class-validator';
import { validateCronExpression } from 'cron';
import { readAllowedHosts } from './allowed-hosts';
import { isKnownExample, isKnownKey } from './known-examples';

/** Nest's levels, least to most verbose; each includes those before it. */
export const LOG_LEVELS = ['error', 'warn', 'log', 'debug', 'verbose'] as const;
export type LogLevelName = (typeof LOG_LEVELS)[number];

/** `json`: one JSON object a line; `pretty`: readable lines; `auto`: pretty in a terminal, JSON otherwise. */
export const LOG_FORMATS = ['auto', 'json', 'pretty'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

/** `all`: HTTP and jobs; `api`: HTTP only (jobs wait for a worker); `worker`: jobs and schedules, no HTTP port. */
export const ROLES = ['all', 'api', 'worker'] as const;
export type RoleName = (typeof ROLES)[number];

/** OTLP over HTTP, as protobuf or JSON (the standard SDK's two HTTP exporters). */
export const OTLP_PROTOCOLS = ['http/protobuf', 'http/json'] as const;
export type OtlpProtocol = (typeof OTLP_PROTOCOLS)[number];

/** The standard samplers of OTEL_TRACES_SAMPLER. */
export const TRACE_SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
] as const;
export type TraceSamplerName = (typeof TRACE_SAMPLERS)[number];

/** `a=1, b=x%20y` as pairs, values URL-decoded (the OTEL_* lists' format). */
export function keyValuePairs(value: string | undefined): [string, string][] {
  if (!value) return [];
  return value.split(',').map((pair) => {
    const eq = pair.indexOf('=');
    const raw = pair.slice(eq + 1).trim();
    let decoded = raw;
    try {
      decoded = decodeURIComponent(raw);
    } catch {
      // Not URL-encoded after all: kept as written.
    }
    return [pair.slice(0, eq).trim(), decoded];
  });
}

/** A cron expression (5 or 6 fields, as the `cron` package reads them), or `off` for no schedule. */
@ValidatorConstraint({ name: 'cronExpression' })
class CronExpression implements ValidatorConstraintInterface {
  validate(value: unknown): boolean {
    return value === 'off' || (typeof value === 'string' && /^\S+(\s+\S+){4,5}$/.test(value.trim()) && validateCronExpression(value).valid);
  }

  defaultMessage(args: ValidationArguments): string {
    return `${args.property} must be a cron expression of 5 or 6 fields, or "off"`;
  }
}

/** `20%` or `0.2`: a share of Pozy's advertised limit, as a fraction. */
export function reserveShare(value: string): number {
  return value.endsWith('%') ? Number(value.slice(0, -1)) / 100 : Number(value);
}

@ValidatorConstraint({ name: 'atMostNinetyPercent' })
class AtMostNinetyPercent implements ValidatorConstraintInterface {
  validate(value: unknown): boolean {
    return typeof value === 'string' && reserveShare(value) <= 0.9;
  }

  defaultMessage(args: ValidationArguments): string {
    return `${args.property} must leave pozy-sync at least 10% of Pozy's limit (at most 90%)`;
  }
}

/** RFC 6750's token characters: what a client can send after `Bearer ` as it is. */
const BEARER_TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;
/** Shorter tokens could be guessed; 16 random characters are far beyond that. */
export const MIN_TOKEN_LENGTH = 16;

/** What is wrong with one token (`it` names it in the answer), or undefined; the token is never echoed. */
function tokenProblem(token: string, it: string): string | undefined {
  if (!BEARER_TOKEN.test(token)) return `${it} holds a space or a character a Bearer token cannot carry (letters, digits and -._~+/ only)`;
  if (token.length < MIN_TOKEN_LENGTH) return `${it} is shorter than ${MIN_TOKEN_LENGTH} characters`;
  return undefined;
}

/** The problems of a comma-separated token list, each naming the entry by position (a token is never echoed). */
export function tokenListProblems(value: string): string[] {
  const tokens = value.split(',');
  return tokens.flatMap((token, i) => {
    const entry = `entry ${i + 1}`;
    if (token.trim() === '') return [`${entry} is empty (a stray comma?)`];
    const problem = tokenProblem(token, entry);
    if (problem) return [problem];
    const first = tokens.indexOf(token);
    return first < i ? [`${entry} repeats entry ${first + 1}`] : [];
  });
}

/** `API_TOKENS=none`: the query endpoints open to anyone, chosen (production refuses API_TOKENS unset). */
export const OPEN_READS = 'none';

/** Two at most: the secret in use and, while a rotation in Pozy is under way, the other one. */
export const MAX_WEBHOOK_SECRETS = 2;

/** The problems of POZY_WEBHOOK_SECRET: one secret, or two comma-separated while rotating (a secret is never echoed). */
export function webhookSecretProblems(value: string): string[] {
  const secrets = value.split(',');
  if (secrets.length > MAX_WEBHOOK_SECRETS)
    return [`it holds ${secrets.length} comma-separated secrets; ${MAX_WEBHOOK_SECRETS} at most (while rotating)`];
  return secrets.flatMap((secret, i) => {
    const entry = `entry ${i + 1}`;
    if (secret.trim() === '') return [`${entry} is empty (a stray comma?)`];
    if (secret.trim() !== secret) return [`${entry} starts or ends with a space`];
    return i > 0 && secret === secrets[0] ? [`${entry} repeats entry 1`] : [];
  });
}

@ValidatorConstraint({ name: 'webhookSecrets' })
class WebhookSecrets implements ValidatorConstraintInterface {
  validate(value: unknown): boolean {
    return typeof value === 'string' && webhookSecretProblems(value).length === 0;
  }

  defaultMessage(args: ValidationArguments): string {
    const problems = typeof args.value === 'string' ? webhookSecretProblems(args.value) : ['it is not a string'];
    return `${args.property} must be one secret, or two comma-separated while rotating: ${problems.join('; ')}`;
  }
}

/** A key id: what each stored value names its key by, so keys can rotate. */
const KEY_ID = /^[A-Za-z0-9_-]{1,32}$/;
/** Standard base64 of exactly 32 bytes (AES-256), as `openssl rand -base64 32` prints it. */
const KEY_32_BYTES = /^[A-Za-z0-9+/]{43}=$/;

/** One entry of SECRETS_ENCRYPTION_KEY, decoded. */
export interface EncryptionKey {
  readonly id: string;
  readonly key: Buffer;
}

/** The problems of SECRETS_ENCRYPTION_KEY (`id:base64`, comma-separated), naming entries by position and id, never a key. */
export function encryptionKeyProblems(value: string): string[] {
  const entries = value.split(',');
  const ids = entries.map((entry) => entry.split(':')[0]);
  return entries.flatMap((entry, i) => {
    const name = `entry ${i + 1}`;
    if (entry.trim() === '') return [`${name} is empty (a stray comma?)`];
    const colon = entry.indexOf(':');
    if (colon < 0) return [`${name} is not <key id>:<base64 of 32 bytes>`];
    const id = entry.slice(0, colon);
    if (!KEY_ID.test(id)) return [`${name}'s key id must be 1 to 32 letters, digits, _ or -`];
    if (!KEY_32_BYTES.test(entry.slice(colon + 1))) return [`${name} (key "${id}") is not the base64 of 32 bytes (openssl rand -base64 32)`];
    const first = ids.indexOf(id);
    return first < i ? [`${name} repeats key id "${id}" of entry ${first + 1}`] : [];
  });
}

/** The keys of a valid SECRETS_ENCRYPTION_KEY, newest (the one that encrypts) first. */
export function parseEncryptionKeys(value: string | undefined): EncryptionKey[] {
  if (!value) return [];
  return value.split(',').map((entry) => {
    const colon = entry.indexOf(':');
    return { id: entry.slice(0, colon), key: Buffer.from(entry.slice(colon + 1), 'base64') };
  });
}

@ValidatorConstraint({ name: 'encryptionKeys' })
class EncryptionKeys implements ValidatorConstraintInterface {
  validate(value: unknown): boolean {
    return typeof value === 'string' && encryptionKeyProblems(value).length === 0;
  }

  defaultMessage(args: ValidationArguments): string {
    const problems = typeof args.value === 'string' ? encryptionKeyProblems(args.value) : ['it is not a string'];
    return `${args.property} must be comma-separated <key id>:<base64 of 32 bytes> entries, the newest first: ${problems.join('; ')}`;
  }
}

@ValidatorConstraint({ name: 'tokenList' })
class TokenList implements ValidatorConstraintInterface {
  validate(value: unknown): boolean {
    return value === OPEN_READS || (typeof value === 'string' && tokenListProblems(value).length === 0);
  }

  defaultMessage(args: ValidationArguments): string {
    const problems = typeof args.value === 'string' ? tokenListProblems(args.value) : ['it is not a string'];
    return `${args.property} must be comma-separated tokens of at least ${MIN_TOKEN_LENGTH} characters, or "${OPEN_READS}": ${problems.join('; ')}`;
  }
}

/** ADMIN_TOKEN is held to the rule of a read token: it opens more. */
@ValidatorConstraint({ name: 'adminToken' })
class AdminToken implements ValidatorConstraintInterface {
  validate(value: unknown): boolean {
    return typeof value === 'string' && tokenProblem(value, 'it') === undefined;
  }

  defaultMessage(args: ValidationArguments): string {
    const problem = typeof args.value === 'string' ? tokenProblem(args.value, 'it') : 'it is not a string';
    return `${args.property} must be one token of at least ${MIN_TOKEN_LENGTH} characters of letters, digits and -._~+/ (e.g. openssl rand -hex 24): ${problem}`;
  }
}

@ValidatorConstraint({ name: 'allowedHosts' })
class AllowedHostList implements ValidatorConstraintInterface {
  validate(value: unknown): boolean {
    return typeof value === 'string' && readAllowedHosts(value).problems.length === 0;
  }

  defaultMessage(args: ValidationArguments): string {
    const problems = typeof args.value === 'string' ? readAllowedHosts(args.value).problems : ['it is not a string'];
    return `${args.property} must be comma-separated host names, IP addresses or CIDRs: ${problems.join('; ')}`;
  }
}

/** Empty strings count as unset, as in a shell (`FOO= node ...`) or a compose file. */
const emptyAsUnset = () => Transform(({ value }: { value: unknown }) => (value === '' ? undefined : value));
const toInt = () =>
  Transform(({ value }: { value: unknown }) =>
    value === undefined || value === '' ? undefined : typeof value === 'string' && /^-?\d+$/.test(value) ? Number(value) : value,
  );

/** The process environment as the service accepts it; every field is one variable of docs/configuration.md's table. */
export class EnvironmentVariables {
  @IsOptional()
  @IsIn(['development', 'production', 'test'])
  @emptyAsUnset()
  NODE_ENV?: string;

  @toInt()
  @IsInt()
  @Min(0)
  @Max(65535)
  PORT = 3000;

  @IsIn(ROLES)
  ROLE: RoleName = 'all';

  @IsIn(LOG_LEVELS)
  LOG_LEVEL: LogLevelName = 'log';

  @IsIn(LOG_FORMATS)
  LOG_FORMAT: LogFormat = 'auto';

  @IsString()
  @IsNotEmpty()
  HOST = '0.0.0.0';

  @IsOptional()
  @emptyAsUnset()
  @Matches(/^postgres(ql)?:\/\/\S+$/, { message: 'DATABASE_URL must be a postgres:// or postgresql:// URL' })
  DATABASE_URL?: string;

  /** A streaming replica of DATABASE_URL's server: the query endpoints read from it unless asked for consistency=strong. */
  @IsOptional()
  @emptyAsUnset()
  @Matches(/^postgres(ql)?:\/\/\S+$/, { message: 'DATABASE_READ_URL must be a postgres:// or postgresql:// URL' })
  DATABASE_READ_URL?: string;

  @toInt()
  @IsInt()
  @Min(1)
  @Max(65535)
  EMBEDDED_DATABASE_PORT = 54329;

  /** `allow`: with NODE_ENV=production and no DATABASE_URL, keep production data in the embedded PostgreSQL anyway. */
  @IsOptional()
  @emptyAsUnset()
  @IsIn(['allow'], { message: 'EMBEDDED_DATABASE must be "allow" or unset' })
  EMBEDDED_DATABASE?: 'allow';

  /** A publication of the mirror's tables for logical replication (Debezium, Sequin: docs/cdc.md); unset: none. */
  @IsOptional()
  @emptyAsUnset()
  @Matches(/^[a-z_][a-z0-9_]{0,62}$/, {
    message:
      'LOGICAL_PUBLICATION must be a PostgreSQL identifier: lowercase letters, digits and underscores, not starting with a digit, at most 63 characters',
  })
  LOGICAL_PUBLICATION?: string;

  @IsUrl({ require_tld: false, protocols: ['http', 'https'], require_protocol: true })
  POZY_API_URL = 'https://api.pozy.ai';

  /** The `default` workspace's key. Unset: the service starts with no workspace and waits for POST /admin/workspaces. */
  @IsOptional()
  @emptyAsUnset()
  @IsString()
  POZY_API_KEY?: string;

  /**
   * The service's externally reachable base URL: with it, POST /admin/workspaces makes each workspace's webhook
   * subscription in Pozy (PUBLIC_URL/webhooks/pozy/<id>) and keeps it healthy.
   */
  @IsOptional()
  @emptyAsUnset()
  @IsUrl({ require_tld: false, protocols: ['http', 'https'], require_protocol: true }, { message: 'PUBLIC_URL must be an http(s) URL' })
  PUBLIC_URL?: string;

  /** Imports of new workspaces that run at once across every replica; the rest wait, in the order they were added. */
  @toInt()
  @IsInt()
  @Min(1)
  @Max(64)
  IMPORT_CONCURRENCY = 4;

  /** How often a worker checks each managed webhook subscription in Pozy (isActive, failureCount). */
  @toInt()
  @IsInt()
  @Min(1_000)
  WEBHOOK_HEALTH_CHECK_MS = 60_000;

  /** One secret, or two comma-separated while the secret is rotated in Pozy: a delivery signed with either is accepted. */
  @IsOptional()
  @emptyAsUnset()
  @Validate(WebhookSecrets)
  POZY_WEBHOOK_SECRET?: string;

  /** Keys that encrypt subscription secrets at rest (AES-256-GCM), `id:base64` comma-separated, the newest first. */
  @IsOptional()
  @emptyAsUnset()
  @Validate(EncryptionKeys)
  SECRETS_ENCRYPTION_KEY?: string;

  @toInt()
  @IsInt()
  @Min(100)
  @Max(120_000)
  POZY_TIMEOUT_MS = 10_000;

  @toInt()
  @IsInt()
  @Min(1)
  @Max(100_000)
  POZY_RATE_LIMIT_PER_MINUTE = 600;

  @toInt()
  @IsInt()
  @Min(1_000)
  @Max(3_600_000)
  POZY_RATE_LIMIT_WINDOW_MS = 60_000;

  @Matches(/^(\d{1,2}(\.\d+)?%|0(\.\d+)?)$/, {
    message: 'POZY_RATE_LIMIT_RESERVE must be a percentage from 0% to 90% (e.g. 20%) or a fraction from 0 to 0.9',
  })
  @Validate(AtMostNinetyPercent)
  POZY_RATE_LIMIT_RESERVE = '20%';

  @IsIn(['auto', 'off'], { message: 'INITIAL_IMPORT must be auto or off' })
  INITIAL_IMPORT: 'auto' | 'off' = 'auto';

  @toInt()
  @IsInt()
  @Min(0)
  @Max(10)
  POZY_MAX_RETRIES = 4;

  /** The longest pause a 429 (or headers saying the window is spent) may impose on every replica. */
  @toInt()
  @IsInt()
  @Min(1_000)
  @Max(3_600_000)
  POZY_MAX_PAUSE_MS = 120_000;

  /** Pozy's answers are read up to this many bytes; a larger one is cut off, unread, and fails its request. */
  @toInt()
  @IsInt()
  @Min(65_536)
  @Max(268_435_456)
  POZY_MAX_RESPONSE_BYTES = 16_777_216;

  @toInt()
  @IsInt()
  @Min(0)
  @Max(600_000)
  RECONCILE_CLOCK_SKEW_MS = 5_000;

  /** An event timestamped further ahead of this server's clock is refused: it would stick as the resource's latest. */
  @toInt()
  @IsInt()
  @Min(0)
  @Max(86_400_000)
  EVENT_MAX_FUTURE_MS = 600_000;

  @toInt()
  @IsInt()
  @Min(0)
  @Max(600_000)
  READ_LAG_GRACE_MS = 10_000;

  @toInt()
  @IsInt()
  @Min(0)
  @Max(86_400_000)
  DEAD_LETTER_AFTER_MS = 60_000;

  @IsOptional()
  @emptyAsUnset()
  @Validate(AdminToken)
  ADMIN_TOKEN?: string;

  /** Comma-separated read tokens; two at once let a team rotate. Unset or `none`: the query endpoints are open. */
  @IsOptional()
  @emptyAsUnset()
  @Validate(TokenList)
  API_TOKENS?: string;

  /** `true`: the status page and /sync/status answer without a token too, without resource ids or error texts. */
  @IsIn(['true', 'false'], { message: 'STATUS_PUBLIC must be true or false' })
  STATUS_PUBLIC: 'true' | 'false' = 'true';

  /** One reading of the status figures answers every caller for this long; 0: only callers while it is read share it. */
  @toInt()
  @IsInt()
  @Min(0)
  @Max(60_000)
  STATUS_CACHE_MS = 1_000;

  @Validate(CronExpression)
  BACKFILL_CRON = '* * * * *';

  @toInt()
  @IsInt()
  @Min(0)
  @Max(86_400_000)
  BACKFILL_OVERLAP_MS = 600_000;

  @Validate(CronExpression)
  SWEEP_CRON = 'off';

  @toInt()
  @IsInt()
  @Min(7, {
    message:
      "EVENT_RETENTION_DAYS must be at least 7: Pozy's guide asks to keep event ids at least a few days, so that its redeliveries stay deduplicated",
  })
  @Max(3650)
  EVENT_RETENTION_DAYS = 30;

  /** How long the change feed (GET /changes) keeps a change: a consumer away longer resynchronises. */
  @toInt()
  @IsInt()
  @Min(1)
  @Max(3650)
  CHANGE_RETENTION_DAYS = 7;

  /**
   * Posts' and accounts' versions (GET /posts/:id/history, ?asOf=) superseded longer ago than this many days are
   * pruned; each one's newest version is kept. About 1.5 GB a million changes of a typical post.
   */
  @toInt()
  @IsInt()
  @Min(1)
  @Max(3650)
  HISTORY_RETENTION_DAYS = 30;

  /**
   * How far behind a named consumer (POST /admin/consumers) may fall, in days, while retention holds the change feed's
   * entries for it; past it the consumer is expired and retention prunes as usual.
   */
  @toInt()
  @IsInt()
  @Min(1)
  @Max(3650)
  CONSUMER_MAX_LAG_DAYS = 7;

  @Validate(CronExpression)
  RETENTION_CRON = '17 * * * *';

  @toInt()
  @IsInt()
  @Min(10)
  @Max(100_000)
  RETENTION_BATCH_SIZE = 1_000;

  @IsString()
  @IsNotEmpty()
  SPOOL_DIR = '.data/spool';

  @toInt()
  @IsInt()
  @Min(1)
  @Max(200)
  DATABASE_POOL_SIZE = 20;

  @toInt()
  @IsInt()
  @Min(1)
  @Max(200)
  DATABASE_READ_POOL_SIZE = 10;

  /** Connections of the query endpoints on the primary, apart from DATABASE_POOL_SIZE: reads can never take the receiver's. */
  @toInt()
  @IsInt()
  @Min(1)
  @Max(200)
  DATABASE_QUERY_POOL_SIZE = 5;

  /** Every statement of the query endpoints (on the primary and on the read replica) is cut after this long. */
  @toInt()
  @IsInt()
  @Min(10)
  @Max(600_000)
  QUERY_STATEMENT_TIMEOUT_MS = 5_000;

  /** Long polls of GET /changes waiting at once in this process; past it, 503. */
  @toInt()
  @IsInt()
  @Min(1)
  @Max(100_000)
  CHANGES_MAX_WAITERS = 1_000;

  @toInt()
  @IsInt()
  @Min(100)
  @Max(4_500)
  ACK_TIMEOUT_MS = 2_000;

  @toInt()
  @IsInt()
  @Min(10)
  @Max(86_400_000)
  SPOOL_RETRY_FIRST_MS = 10_000;

  @toInt()
  @IsInt()
  @Min(10)
  @Max(86_400_000)
  SPOOL_RETRY_SECOND_MS = 1_200_000;

  @toInt()
  @IsInt()
  @Min(0)
  @Max(60_000)
  RECONCILE_COALESCE_WINDOW_MS = 1_000;

  @toInt()
  @IsInt()
  @Min(1)
  @Max(100)
  WORKER_CONCURRENCY = 10;

  @toInt()
  @IsInt()
  @Min(0)
  @Max(600_000)
  SHUTDOWN_GRACE_MS = 10_000;

  @toInt()
  @IsInt()
  @Min(0)
  @Max(60_000)
  SHUTDOWN_DRAIN_MS = 1_000;
  @toInt()
  @IsInt()
  @Min(100)
  @Max(120_000)
  NOTIFY_TIMEOUT_MS = 10_000;

  @toInt()
  @IsInt()
  @Min(1)
  @Max(100)
  NOTIFY_CONCURRENCY = 8;

  @toInt()
  @IsInt()
  @Min(10)
  @Max(3_600_000)
  NOTIFY_RETRY_BASE_MS = 1_000;

  @toInt()
  @IsInt()
  @Min(10)
  @Max(86_400_000)
  NOTIFY_RETRY_MAX_MS = 300_000;

  @toInt()
  @IsInt()
  @Min(1_000)
  @Max(604_800_000)
  NOTIFY_PAUSE_AFTER_MS = 900_000;

  @toInt()
  @IsInt()
  @Min(1)
  @Max(10_000)
  NOTIFY_REPLAY_PER_SECOND = 10;

  /** Internal subscribers a team allows: host names (as written in the URL), IP addresses, CIDRs. Unset: none. */
  @IsOptional()
  @emptyAsUnset()
  @Validate(AllowedHostList)
  NOTIFY_ALLOWED_HOSTS?: string;

  /** The freshness objective's bound: a read owed longer than this is a breach (ops.objective.breached). */
  @toInt()
  @IsInt()
  @Min(100)
  @Max(3_600_000)
  FRESHNESS_OBJECTIVE_MS = 5_000;

  /**
   * The notification objective's bound: a change notification owed to a healthy subscriber (at its first attempt)
   * longer than this after its write is a breach (ops.objective.breached).
   */
  @toInt()
  @IsInt()
  @Min(100)
  @Max(3_600_000)
  NOTIFICATION_OBJECTIVE_MS = 2_000;

  /** OTLP/HTTP base URL of a trace collector (`/v1/traces` is appended); unset with the next one: no traces, no exporter. */
  @IsOptional()
  @emptyAsUnset()
  @IsUrl(
    { require_tld: false, protocols: ['http', 'https'], require_protocol: true },
    { message: 'OTEL_EXPORTER_OTLP_ENDPOINT must be an http(s) URL' },
  )
  OTEL_EXPORTER_OTLP_ENDPOINT?: string;

  /** The traces endpoint itself, as written (it wins over OTEL_EXPORTER_OTLP_ENDPOINT). */
  @IsOptional()
  @emptyAsUnset()
  @IsUrl(
    { require_tld: false, protocols: ['http', 'https'], require_protocol: true },
    { message: 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT must be an http(s) URL' },
  )
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?: string;

  @IsIn(OTLP_PROTOCOLS, { message: `OTEL_EXPORTER_OTLP_PROTOCOL must be one of ${OTLP_PROTOCOLS.join(', ')} (gRPC is not supported)` })
  OTEL_EXPORTER_OTLP_PROTOCOL: OtlpProtocol = 'http/protobuf';

  /** `key=value` pairs, comma-separated, sent with every export (a collector's API key, say); values may be URL-encoded. */
  @IsOptional()
  @emptyAsUnset()
  @Matches(/^\s*[^=,\s]+\s*=[^,]*(,\s*[^=,\s]+\s*=[^,]*)*$/, { message: 'OTEL_EXPORTER_OTLP_HEADERS must be comma-separated key=value pairs' })
  OTEL_EXPORTER_OTLP_HEADERS?: string;

  @IsString()
  @IsNotEmpty()
  OTEL_SERVICE_NAME = 'pozy-sync';

  /** `key=value` pairs, comma-separated, added to every span's resource (deployment.environment=prod, say). */
  @IsOptional()
  @emptyAsUnset()
  @Matches(/^\s*[^=,\s]+\s*=[^,]*(,\s*[^=,\s]+\s*=[^,]*)*$/, { message: 'OTEL_RESOURCE_ATTRIBUTES must be comma-separated key=value pairs' })
  OTEL_RESOURCE_ATTRIBUTES?: string;

  @IsIn(TRACE_SAMPLERS, { message: `OTEL_TRACES_SAMPLER must be one of ${TRACE_SAMPLERS.join(', ')}` })
  OTEL_TRACES_SAMPLER: TraceSamplerName = 'parentbased_always_on';

  /** The ratio of the *traceidratio samplers, 0 to 1. */
  @IsOptional()
  @emptyAsUnset()
  @Matches(/^(0(\.\d+)?|1(\.0+)?)$/, { message: 'OTEL_TRACES_SAMPLER_ARG must be a ratio from 0 to 1' })
  OTEL_TRACES_SAMPLER_ARG?: string;

  /** Spans are exported in batches at most this long after they end. */
  @toInt()
  @IsInt()
  @Min(10)
  @Max(600_000)
  OTEL_BSP_SCHEDULE_DELAY = 5_000;
}

/** The only names validateEnvironment reads; src/config/app-config.spec.ts fails when a field above is missing. */
export const VARIABLES = [
  'NODE_ENV',
  'PORT',
  'HOST',
  'LOG_LEVEL',
  'LOG_FORMAT',
  'ROLE',
  'DATABASE_URL',
  'DATABASE_READ_URL',
  'EMBEDDED_DATABASE_PORT',
  'EMBEDDED_DATABASE',
  'LOGICAL_PUBLICATION',
  'POZY_API_URL',
  'POZY_API_KEY',
  'PUBLIC_URL',
  'IMPORT_CONCURRENCY',
  'WEBHOOK_HEALTH_CHECK_MS',
  'POZY_WEBHOOK_SECRET',
  'SECRETS_ENCRYPTION_KEY',
  'POZY_TIMEOUT_MS',
  'POZY_RATE_LIMIT_PER_MINUTE',
  'POZY_RATE_LIMIT_WINDOW_MS',
  'POZY_RATE_LIMIT_RESERVE',
  'INITIAL_IMPORT',
  'POZY_MAX_RETRIES',
  'POZY_MAX_PAUSE_MS',
  'POZY_MAX_RESPONSE_BYTES',
  'RECONCILE_CLOCK_SKEW_MS',
  'EVENT_MAX_FUTURE_MS',
  'READ_LAG_GRACE_MS',
  'DEAD_LETTER_AFTER_MS',
  'ADMIN_TOKEN',
  'API_TOKENS',
  'STATUS_PUBLIC',
  'STATUS_CACHE_MS',
  'BACKFILL_CRON',
  'BACKFILL_OVERLAP_MS',
  'SWEEP_CRON',
  'EVENT_RETENTION_DAYS',
  'CHANGE_RETENTION_DAYS',
  'HISTORY_RETENTION_DAYS',
  'CONSUMER_MAX_LAG_DAYS',
  'RETENTION_CRON',
  'RETENTION_BATCH_SIZE',
  'SPOOL_DIR',
  'DATABASE_POOL_SIZE',
  'DATABASE_READ_POOL_SIZE',
  'DATABASE_QUERY_POOL_SIZE',
  'QUERY_STATEMENT_TIMEOUT_MS',
  'CHANGES_MAX_WAITERS',
  'ACK_TIMEOUT_MS',
  'SPOOL_RETRY_FIRST_MS',
  'SPOOL_RETRY_SECOND_MS',
  'RECONCILE_COALESCE_WINDOW_MS',
  'WORKER_CONCURRENCY',
  'SHUTDOWN_GRACE_MS',
  'SHUTDOWN_DRAIN_MS',
  'NOTIFY_TIMEOUT_MS',
  'NOTIFY_CONCURRENCY',
  'NOTIFY_RETRY_BASE_MS',
  'NOTIFY_RETRY_MAX_MS',
  'NOTIFY_PAUSE_AFTER_MS',
  'NOTIFY_REPLAY_PER_SECOND',
  'NOTIFY_ALLOWED_HOSTS',
  'FRESHNESS_OBJECTIVE_MS',
  'NOTIFICATION_OBJECTIVE_MS',
  'OTEL_EXPORTER_OTLP_ENDPOINT',
  'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
  'OTEL_EXPORTER_OTLP_PROTOCOL',
  'OTEL_EXPORTER_OTLP_HEADERS',
  'OTEL_SERVICE_NAME',
  'OTEL_RESOURCE_ATTRIBUTES',
  'OTEL_TRACES_SAMPLER',
  'OTEL_TRACES_SAMPLER_ARG',
  'OTEL_BSP_SCHEDULE_DELAY',
] as const satisfies readonly (keyof EnvironmentVariables)[];

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

function describe(errors: ValidationError[]): string[] {
  return errors.flatMap((e) =>
    Object.values(e.constraints ?? {}).map((message) => (message.startsWith(e.property) ? message : `${e.property}: ${message}`)),
  );
}

const PUBLISHED =
  "is an example this repository publishes (docker-compose.yml's simulator profile, README.md, docs/, the simulator or the demo): anyone can read it, and NODE_ENV=production refuses it; set one of your own";

/** A database URL's passwords, decoded: its user info's, and a `password` parameter's (which pg also reads). */
function passwordsOf(url: string | undefined): string[] {
  try {
    const parsed = new URL(url ?? '');
    return [decodeURIComponent(parsed.password), parsed.searchParams.get('password') ?? ''].filter((password) => password !== '');
  } catch {
    return [];
  }
}

/** The variables holding a secret the repository publishes (KNOWN_EXAMPLE_SECRETS), by name and entry, never by value. */
function knownExampleProblems(env: EnvironmentVariables): string[] {
  const entries = (name: string, value: string | undefined) =>
    (value?.split(',') ?? []).map((entry, i, all) => ({ entry, what: all.length > 1 ? `${name} entry ${i + 1}` : name }));
  const problems = [
    ...entries('POZY_API_KEY', env.POZY_API_KEY),
    ...entries('POZY_WEBHOOK_SECRET', env.POZY_WEBHOOK_SECRET),
    ...entries('ADMIN_TOKEN', env.ADMIN_TOKEN),
    ...entries('API_TOKENS', env.API_TOKENS),
    ...passwordsOf(env.DATABASE_URL).map((entry) => ({ entry, what: "DATABASE_URL's password" })),
    ...passwordsOf(env.DATABASE_READ_URL).map((entry) => ({ entry, what: "DATABASE_READ_URL's password" })),
  ]
    .filter(({ entry }) => isKnownExample(entry))
    .map(({ what }) => `${what} ${PUBLISHED}`);
  // Only as the key that encrypts: after it, a published key still decrypts while secrets:reencrypt moves what it sealed.
  const [newest] = parseEncryptionKeys(env.SECRETS_ENCRYPTION_KEY);
  if (newest && isKnownKey(newest.key)) {
    problems.push(
      `SECRETS_ENCRYPTION_KEY entry 1 (key "${newest.id}") ${PUBLISHED}. A published key may only follow your own (k1:<yours>,<published>) while npm run secrets:reencrypt moves the secrets it encrypted`,
    );
  }
  return problems;
}

/** API_TOKENS as a list: none when unset or `none`. */
export function readTokensOf(env: Pick<EnvironmentVariables, 'API_TOKENS'>): string[] {
  return env.API_TOKENS === undefined || env.API_TOKENS === OPEN_READS ? [] : env.API_TOKENS.split(',');
}

/** Validates the raw environment; throws a ConfigError naming every bad variable. */
export function validateEnvironment(env: Record<string, string | undefined>): EnvironmentVariables {
  // Only our own keys: the rest of the environment is none of our business (and may hold secrets).
  const relevant = Object.fromEntries(VARIABLES.filter((key) => env[key] !== undefined).map((key) => [key, env[key]]));
  const parsed = plainToInstance(EnvironmentVariables, relevant, { exposeDefaultValues: true });
  const problems = describe(validateSync(parsed, { forbidUnknownValues: true, stopAtFirstError: true }));
  // Without POZY_API_KEY there is no environment workspace to receive for; each added one has its own secret.
  if (parsed.NODE_ENV === 'production' && parsed.POZY_API_KEY && !parsed.POZY_WEBHOOK_SECRET) {
    problems.push('POZY_WEBHOOK_SECRET is required when NODE_ENV=production and POZY_API_KEY is set (unsigned webhooks would be accepted)');
  }
  if (parsed.NODE_ENV === 'production' && !parsed.SECRETS_ENCRYPTION_KEY) {
    problems.push(
      'SECRETS_ENCRYPTION_KEY is required when NODE_ENV=production (subscription secrets would be stored in plaintext); generate one with: echo "k1:$(openssl rand -base64 32)"',
    );
  }
  if (parsed.NODE_ENV === 'production' && !parsed.DATABASE_URL && parsed.EMBEDDED_DATABASE !== 'allow') {
    problems.push(
      'DATABASE_URL is required when NODE_ENV=production (unset, production data would live in an embedded PostgreSQL under .data/postgres); set EMBEDDED_DATABASE=allow to choose that',
    );
  }
  if (parsed.NODE_ENV === 'production') problems.push(...knownExampleProblems(parsed));
  if (parsed.NODE_ENV === 'production' && !parsed.API_TOKENS) {
    problems.push(
      `API_TOKENS is required when NODE_ENV=production (unset, the query endpoints are open to anyone who reaches the port); set read tokens, or API_TOKENS=${OPEN_READS} to leave them open`,
    );
  }
  const readTokens = readTokensOf(parsed);
  if (parsed.ADMIN_TOKEN && readTokens.includes(parsed.ADMIN_TOKEN)) {
    problems.push('API_TOKENS must not hold ADMIN_TOKEN: every client given that read token could also use the admin endpoints');
  }
  if (parsed.STATUS_PUBLIC === 'false' && readTokens.length === 0) {
    problems.push(
      'STATUS_PUBLIC=false needs API_TOKENS: without them every read is open, the status included; set API_TOKENS, or STATUS_PUBLIC=true',
    );
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return parsed;
}
