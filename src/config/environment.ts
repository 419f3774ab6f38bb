import { Transform } from 'class-transformer';
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
  ValidationArguments,
  ValidationError,
  ValidatorConstraint,
  ValidatorConstraintInterface,
} from 'class-validator';
import { validateCronExpression } from 'cron';
import { readAllowedHosts } from './allowed-hosts';
import { DatabaseUrlError, parseDatabaseUrl, passwordsOf } from './database-url';
import type { Environment } from './variables';
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

/** A libpq URL with one host or several (`h1:5432,h2:5432`) and, optionally, libpq's `target_session_attrs`. */
@ValidatorConstraint({ name: 'databaseUrl' })
class DatabaseUrl implements ValidatorConstraintInterface {
  validate(value: unknown): boolean {
    return typeof value === 'string' && databaseUrlProblem(value) === undefined;
  }

  defaultMessage(args: ValidationArguments): string {
    const problem = typeof args.value === 'string' ? databaseUrlProblem(args.value) : 'it is not a string';
    return `${args.property} ${problem}`;
  }
}

function databaseUrlProblem(value: string): string | undefined {
  try {
    parseDatabaseUrl(value, 'any');
    return undefined;
  } catch (error) {
    if (error instanceof DatabaseUrlError) return error.message;
    throw error;
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

/**
 * What one variable accepts: its validators (applied as decorators of a field of EnvironmentVariables, in the order
 * they would be written), its default, and how docs/configuration.md says what it accepts. `T` is its validated value.
 */
export interface Kind<T> {
  readonly decorators: readonly PropertyDecorator[];
  /** undefined: the variable is optional (unset or empty, it stays undefined). */
  readonly default: T | undefined;
  readonly accepts: string;
}

/** A kind with no default: empty counts as unset, and unset is valid. */
function optional<T>(decorators: PropertyDecorator[], accepts: string): Kind<T | undefined> {
  return { decorators: [IsOptional(), emptyAsUnset(), ...decorators], default: undefined, accepts };
}

const code = (value: string | number) => `\`${value}\``;
const HTTP_URL = { require_tld: false, protocols: ['http', 'https'], require_protocol: true };

/** An integer from `min` to `max` (no upper bound when `max` is omitted). */
export function integer(value: number, min: number, max?: number, options?: { minMessage: string }): Kind<number> {
  const bounds = [Min(min, options && { message: options.minMessage }), ...(max === undefined ? [] : [Max(max)])];
  return {
    decorators: [toInt(), IsInt(), ...bounds],
    default: value,
    accepts: max === undefined ? `integer, at least ${code(min)}` : `integer, ${code(min)} to ${code(max)}`,
  };
}

/** One of `values`, `value` when unset. */
export function oneOf<const V extends readonly string[]>(values: V, value: V[number], message?: string): Kind<V[number]> {
  return { decorators: [IsIn(values, message === undefined ? undefined : { message })], default: value, accepts: values.map(code).join(', ') };
}

export function optionalOneOf<const V extends readonly string[]>(values: V, message?: string): Kind<V[number] | undefined> {
  return optional([IsIn(values, message === undefined ? undefined : { message })], values.map(code).join(', '));
}

/** Any text but empty. */
export function text(value: string): Kind<string> {
  return { decorators: [IsString(), IsNotEmpty()], default: value, accepts: 'text, not empty' };
}

export function optionalText(): Kind<string | undefined> {
  return optional([IsString()], 'text');
}

/** Text matching `pattern`; `message` says what it must be (it names the variable). */
export function optionalMatching(pattern: RegExp, message: string, accepts: string): Kind<string | undefined> {
  return optional([Matches(pattern, { message })], accepts);
}

/** The OTEL_* lists' `key=value, ...` format. */
export const KEY_VALUE_PAIRS = /^\s*[^=,\s]+\s*=[^,]*(,\s*[^=,\s]+\s*=[^,]*)*$/;

/** An http(s) URL, `value` when unset. */
export function httpUrl(value: string): Kind<string> {
  return { decorators: [IsUrl(HTTP_URL)], default: value, accepts: 'http(s) URL' };
}

export function optionalHttpUrl(message: string): Kind<string | undefined> {
  return optional([IsUrl(HTTP_URL, { message })], 'http(s) URL');
}

/** A cron expression (5 or 6 fields) or `off`. */
export function cron(value: string): Kind<string> {
  return { decorators: [Validate(CronExpression)], default: value, accepts: 'cron expression (5 or 6 fields), or `off`' };
}

/** POZY_RATE_LIMIT_RESERVE's share of Pozy's limit. */
export function reserve(value: string): Kind<string> {
  return {
    decorators: [
      Matches(/^(\d{1,2}(\.\d+)?%|0(\.\d+)?)$/, {
        message: 'POZY_RATE_LIMIT_RESERVE must be a percentage from 0% to 90% (e.g. 20%) or a fraction from 0 to 0.9',
      }),
      Validate(AtMostNinetyPercent),
    ],
    default: value,
    accepts: '`0%` to `90%`, or `0` to `0.9`',
  };
}

export const webhookSecrets = (): Kind<string | undefined> =>
  optional([Validate(WebhookSecrets)], `one secret, or ${MAX_WEBHOOK_SECRETS} comma-separated`);
export const encryptionKeys = (): Kind<string | undefined> =>
  optional([Validate(EncryptionKeys)], '`<key id>:<base64 of 32 bytes>`, comma-separated');
export const adminToken = (): Kind<string | undefined> => optional([Validate(AdminToken)], `token, at least ${MIN_TOKEN_LENGTH} characters`);
export const tokenList = (): Kind<string | undefined> =>
  optional([Validate(TokenList)], `tokens of at least ${MIN_TOKEN_LENGTH} characters, comma-separated, or \`${OPEN_READS}\``);
export const databaseUrl = (): Kind<string | undefined> =>
  optional([Validate(DatabaseUrl)], '`postgres://` or `postgresql://` URL, one host or several (`h1:5432,h2:5432`)');
export const allowedHosts = (): Kind<string | undefined> => optional([Validate(AllowedHostList)], 'host names, IP addresses, CIDRs, comma-separated');

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/** class-validator's errors as the startup messages, each starting with the variable's name. */
export function describe(errors: ValidationError[]): string[] {
  return errors.flatMap((e) =>
    Object.values(e.constraints ?? {}).map((message) => (message.startsWith(e.property) ? message : `${e.property}: ${message}`)),
  );
}

const PUBLISHED =
  "is an example this repository publishes (docker-compose.yml's simulator profile, README.md, docs/, the simulator or the demo): anyone can read it, and NODE_ENV=production refuses it; set one of your own";

/** A database URL's passwords, decoded: its user info's, and a `password` parameter's (which pg also reads). */
/** The variables holding a secret the repository publishes (KNOWN_EXAMPLE_SECRETS), by name and entry, never by value. */
function knownExampleProblems(env: Environment): string[] {
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
export function readTokensOf(value: string | undefined): string[] {
  return value === undefined || value === OPEN_READS ? [] : value.split(',');
}

/** The rules that hold between variables, each naming what to set; run once every variable is valid on its own. */
export function combinationProblems(parsed: Environment): string[] {
  const problems: string[] = [];
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
  if (parsed.MIGRATE_ON_START === 'false' && !parsed.DATABASE_URL) {
    problems.push(
      'MIGRATE_ON_START=false needs DATABASE_URL: the embedded PostgreSQL has no migration step of its own; set DATABASE_URL, or MIGRATE_ON_START=true',
    );
  }
  if (parsed.NODE_ENV === 'production') problems.push(...knownExampleProblems(parsed));
  if (parsed.NODE_ENV === 'production' && !parsed.API_TOKENS) {
    problems.push(
      `API_TOKENS is required when NODE_ENV=production (unset, the query endpoints are open to anyone who reaches the port); set read tokens, or API_TOKENS=${OPEN_READS} to leave them open`,
    );
  }
  const readTokens = readTokensOf(parsed.API_TOKENS);
  if (parsed.ADMIN_TOKEN && readTokens.includes(parsed.ADMIN_TOKEN)) {
    problems.push('API_TOKENS must not hold ADMIN_TOKEN: every client given that read token could also use the admin endpoints');
  }
  if (parsed.STATUS_PUBLIC === 'false' && readTokens.length === 0) {
    problems.push(
      'STATUS_PUBLIC=false needs API_TOKENS: without them every read is open, the status included; set API_TOKENS, or STATUS_PUBLIC=true',
    );
  }
  return problems;
}
