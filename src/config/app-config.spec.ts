import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AppConfig } from './app-config';
import { getMetadataStorage } from 'class-validator';
import { ConfigError } from './environment';
import { EnvironmentVariables, VARIABLES } from './variables';
import { configurationDoc, DOCS_CONFIG_COMMAND } from './configuration-doc';
import { KNOWN_EXAMPLE_SECRETS } from './known-examples';

const minimal = { POZY_API_KEY: 'sk_live_x' };
/** Everything NODE_ENV=production asks for; a test unsets (undefined) what it looks at. */
const production: Record<string, string | undefined> = {
  ...minimal,
  NODE_ENV: 'production',
  DATABASE_URL: 'postgresql://u:p@db:5432/pozy',
  POZY_WEBHOOK_SECRET: 'whsec_live_x',
  SECRETS_ENCRYPTION_KEY: `k1:${Buffer.alloc(32, 9).toString('base64')}`,
  API_TOKENS: 'read_token_production_1',
};

function problems(env: Record<string, string | undefined>): string[] {
  try {
    AppConfig.fromEnvironment(env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('AppConfig.fromEnvironment', () => {
  describe('traces (OTEL_*)', () => {
    it('are off, with no exporter, without an endpoint', () => {
      expect(AppConfig.fromEnvironment({ ...minimal, OTEL_SERVICE_NAME: 'mine' }).tracing).toBeNull();
    });

    it('append /v1/traces to the base endpoint, take the traces endpoint as written, and read the standard lists', () => {
      const base = AppConfig.fromEnvironment({
        ...minimal,
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/',
        OTEL_EXPORTER_OTLP_HEADERS: 'x-api-key=a%2Cb, x-team = ops',
        OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=prod',
        OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
        OTEL_TRACES_SAMPLER_ARG: '0.25',
      });
      expect(base.tracing).toEqual({
        url: 'http://collector:4318/v1/traces',
        protocol: 'http/protobuf',
        headers: { 'x-api-key': 'a,b', 'x-team': 'ops' },
        serviceName: 'pozy-sync',
        resourceAttributes: { 'deployment.environment': 'prod' },
        sampler: 'parentbased_traceidratio',
        samplerRatio: 0.25,
        scheduleDelayMs: 5_000,
      });
      const whole = AppConfig.fromEnvironment({
        ...minimal,
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://traces.example/otlp',
      });
      expect(whole.tracing?.url).toBe('https://traces.example/otlp');
    });

    it('name each bad value', () => {
      expect(
        problems({
          ...minimal,
          OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318',
          OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
          OTEL_EXPORTER_OTLP_HEADERS: 'no-equals-sign',
          OTEL_TRACES_SAMPLER: 'sometimes',
          OTEL_TRACES_SAMPLER_ARG: '2',
          OTEL_BSP_SCHEDULE_DELAY: 'soon',
        }),
      ).toEqual([
        'OTEL_EXPORTER_OTLP_ENDPOINT must be an http(s) URL',
        'OTEL_EXPORTER_OTLP_PROTOCOL must be one of http/protobuf, http/json (gRPC is not supported)',
        'OTEL_EXPORTER_OTLP_HEADERS must be comma-separated key=value pairs',
        expect.stringContaining('OTEL_TRACES_SAMPLER must be one of always_on'),
        'OTEL_TRACES_SAMPLER_ARG must be a ratio from 0 to 1',
        expect.stringContaining('OTEL_BSP_SCHEDULE_DELAY'),
      ]);
    });
  });

  it('applies the documented defaults', () => {
    const config = AppConfig.fromEnvironment(minimal);

    expect(config).toMatchObject({
      port: 3000,
      host: '0.0.0.0',
      databaseUrl: undefined,
      pozy: { apiUrl: 'https://api.pozy.ai', apiKey: 'sk_live_x', webhookSecrets: [] },
      secretsEncryptionKeys: [],
      adminToken: undefined,
      backfillCron: '* * * * *',
      spoolDir: '.data/spool',
      reconcileCoalesceWindowMs: 1000,
      logLevels: ['error', 'warn', 'log'],
    });
  });

  it('reads every variable it documents', () => {
    const config = AppConfig.fromEnvironment({
      ...minimal,
      PORT: '8080',
      DATABASE_URL: 'postgresql://u:p@db:5432/pozy',
      POZY_API_URL: 'http://127.0.0.1:4010/',
      POZY_WEBHOOK_SECRET: 'whsec',
      ADMIN_TOKEN: 'admin_token_0123456789',
      BACKFILL_CRON: '*/5 * * * *',
      SPOOL_DIR: '/var/lib/pozy/spool',
      LOG_LEVEL: 'debug',
    });

    expect(config).toMatchObject({
      port: 8080,
      databaseUrl: 'postgresql://u:p@db:5432/pozy',
      pozy: { apiUrl: 'http://127.0.0.1:4010', webhookSecrets: ['whsec'] },
      adminToken: 'admin_token_0123456789',
      backfillCron: '*/5 * * * *',
      spoolDir: '/var/lib/pozy/spool',
      logLevels: ['error', 'warn', 'log', 'debug'],
    });
  });

  it('treats empty values as unset', () => {
    expect(AppConfig.fromEnvironment({ ...minimal, DATABASE_URL: '', POZY_WEBHOOK_SECRET: '', SECRETS_ENCRYPTION_KEY: '' })).toMatchObject({
      databaseUrl: undefined,
      pozy: { webhookSecrets: [] },
      secretsEncryptionKeys: [],
    });
  });

  it.each([
    [{ PORT: '70000' }, /^PORT/],
    [{ PORT: '3.5' }, /^PORT/],
    [{ DATABASE_URL: 'mysql://localhost/db' }, /^DATABASE_URL/],
    [{ DATABASE_READ_URL: 'replica.internal:5432' }, /^DATABASE_READ_URL must be a postgres:\/\/ or postgresql:\/\/ URL$/],
    [{ DATABASE_READ_POOL_SIZE: '0' }, /^DATABASE_READ_POOL_SIZE/],
    [{ POZY_API_URL: 'ftp://api.pozy.ai' }, /^POZY_API_URL/],
    [{ BACKFILL_CRON: 'every minute' }, /^BACKFILL_CRON/],
    [{ LOG_LEVEL: 'loud' }, /^LOG_LEVEL/],
    [{ RECONCILE_COALESCE_WINDOW_MS: '-1' }, /^RECONCILE_COALESCE_WINDOW_MS/],
  ])('names the bad variable in %j', (env, message) => {
    expect(problems({ ...minimal, ...env })).toEqual([expect.stringMatching(message)]);
  });

  it('reads the read replica and its pool, unset by default: every read on the primary', () => {
    expect(AppConfig.fromEnvironment(minimal)).toMatchObject({ databaseReadUrl: undefined, databaseReadPoolSize: 10 });
    expect(
      AppConfig.fromEnvironment({ ...minimal, DATABASE_READ_URL: 'postgres://u:p@replica:5432/pozy', DATABASE_READ_POOL_SIZE: '4' }),
    ).toMatchObject({ databaseReadUrl: 'postgres://u:p@replica:5432/pozy', databaseReadPoolSize: 4 });
    expect(AppConfig.fromEnvironment({ ...minimal, DATABASE_READ_URL: '' }).databaseReadUrl).toBeUndefined();
  });

  it('reads LOGICAL_PUBLICATION, a lowercase PostgreSQL identifier, unset by default: no publication', () => {
    expect(AppConfig.fromEnvironment(minimal).logicalPublication).toBeNull();
    expect(AppConfig.fromEnvironment({ ...minimal, LOGICAL_PUBLICATION: '' }).logicalPublication).toBeNull();
    expect(AppConfig.fromEnvironment({ ...minimal, LOGICAL_PUBLICATION: 'pozy_sync' }).logicalPublication).toBe('pozy_sync');
    expect(AppConfig.fromEnvironment({ ...minimal, LOGICAL_PUBLICATION: `_${'a'.repeat(62)}` }).logicalPublication).toHaveLength(63);
    // Debezium and Sequin name it unquoted, which PostgreSQL folds to lowercase: only names that survive that.
    for (const name of ['PozySync', '1pub', 'pozy-sync', 'pozy sync', 'pub"; DROP TABLE post; --', 'é', 'a'.repeat(64)]) {
      expect(problems({ ...minimal, LOGICAL_PUBLICATION: name })).toEqual([
        expect.stringMatching(/^LOGICAL_PUBLICATION must be a PostgreSQL identifier/),
      ]);
    }
  });

  it("reads the query endpoints' pool, statement timeout and long-poll cap, with their defaults and bounds", () => {
    expect(AppConfig.fromEnvironment(minimal)).toMatchObject({ databaseQueryPoolSize: 5, queryStatementTimeoutMs: 5_000, changesMaxWaiters: 1_000 });
    expect(
      AppConfig.fromEnvironment({ ...minimal, DATABASE_QUERY_POOL_SIZE: '2', QUERY_STATEMENT_TIMEOUT_MS: '250', CHANGES_MAX_WAITERS: '600' }),
    ).toMatchObject({ databaseQueryPoolSize: 2, queryStatementTimeoutMs: 250, changesMaxWaiters: 600 });
    expect(problems({ ...minimal, DATABASE_QUERY_POOL_SIZE: '0' })).toEqual([expect.stringMatching(/^DATABASE_QUERY_POOL_SIZE/)]);
    expect(problems({ ...minimal, QUERY_STATEMENT_TIMEOUT_MS: '5' })).toEqual([expect.stringMatching(/^QUERY_STATEMENT_TIMEOUT_MS/)]);
    expect(problems({ ...minimal, QUERY_STATEMENT_TIMEOUT_MS: '1s' })).toEqual([expect.stringMatching(/^QUERY_STATEMENT_TIMEOUT_MS/)]);
    expect(problems({ ...minimal, CHANGES_MAX_WAITERS: '0' })).toEqual([expect.stringMatching(/^CHANGES_MAX_WAITERS/)]);
  });

  it('reads EVENT_MAX_FUTURE_MS, 10 minutes by default, at most a day', () => {
    expect(AppConfig.fromEnvironment(minimal).eventMaxFutureMs).toBe(600_000);
    expect(AppConfig.fromEnvironment({ ...minimal, EVENT_MAX_FUTURE_MS: '0' }).eventMaxFutureMs).toBe(0);
    expect(problems({ ...minimal, EVENT_MAX_FUTURE_MS: '86400001' })).toEqual([
      expect.stringMatching(/^EVENT_MAX_FUTURE_MS must not be greater than 86400000/),
    ]);
  });

  it('reads STATUS_CACHE_MS, a second by default, 0 to share only the reading in flight, at most a minute', () => {
    expect(AppConfig.fromEnvironment(minimal).statusCacheMs).toBe(1_000);
    expect(AppConfig.fromEnvironment({ ...minimal, STATUS_CACHE_MS: '0' }).statusCacheMs).toBe(0);
    for (const value of ['-1', '60001', '1.5', 'a second']) {
      expect(problems({ ...minimal, STATUS_CACHE_MS: value })).toEqual([expect.stringMatching(/^STATUS_CACHE_MS/)]);
    }
  });

  it('refuses an event retention shorter than a week, naming the variable and why', () => {
    expect(problems({ ...minimal, EVENT_RETENTION_DAYS: '6' })).toEqual([
      expect.stringMatching(/^EVENT_RETENTION_DAYS must be at least 7: .*redeliveries stay deduplicated/),
    ]);
  });

  it('reads the retention settings, with their defaults', () => {
    expect(AppConfig.fromEnvironment(minimal).retention).toEqual({
      eventRetentionDays: 30,
      changeRetentionDays: 7,
      historyRetentionDays: 30,
      consumerMaxLagDays: 7,
      cron: '17 * * * *',
      batchSize: 1000,
    });
    expect(
      AppConfig.fromEnvironment({
        ...minimal,
        EVENT_RETENTION_DAYS: '7',
        CHANGE_RETENTION_DAYS: '2',
        RETENTION_CRON: 'off',
        RETENTION_BATCH_SIZE: '10',
        CONSUMER_MAX_LAG_DAYS: '3',
        HISTORY_RETENTION_DAYS: '90',
      }).retention,
    ).toEqual({ eventRetentionDays: 7, changeRetentionDays: 2, historyRetentionDays: 90, consumerMaxLagDays: 3, cron: null, batchSize: 10 });
    for (const days of ['0', '3651', 'week']) {
      expect(problems({ ...minimal, CHANGE_RETENTION_DAYS: days })).toEqual([expect.stringMatching(/^CHANGE_RETENTION_DAYS/)]);
      expect(problems({ ...minimal, HISTORY_RETENTION_DAYS: days })).toEqual([expect.stringMatching(/^HISTORY_RETENTION_DAYS/)]);
    }
    expect(problems({ ...minimal, RETENTION_CRON: 'hourly' })).toEqual([expect.stringMatching(/^RETENTION_CRON/)]);
    expect(problems({ ...minimal, RETENTION_BATCH_SIZE: '5' })).toEqual([expect.stringMatching(/^RETENTION_BATCH_SIZE/)]);
  });

  it('reads the shared Pozy budget and the import switch, with their defaults', () => {
    expect(AppConfig.fromEnvironment(minimal)).toMatchObject({
      pozy: { rateLimitPerMinute: 600, rateLimitWindowMs: 60_000, rateLimitReserve: 0.2 },
      initialImport: true,
    });
    expect(
      AppConfig.fromEnvironment({ ...minimal, POZY_RATE_LIMIT_RESERVE: '0.35', POZY_RATE_LIMIT_WINDOW_MS: '3000', INITIAL_IMPORT: 'off' }),
    ).toMatchObject({ pozy: { rateLimitWindowMs: 3000, rateLimitReserve: 0.35 }, initialImport: false });
    expect(AppConfig.fromEnvironment({ ...minimal, POZY_RATE_LIMIT_RESERVE: '0%' }).pozy.rateLimitReserve).toBe(0);
    for (const reserve of ['95%', '1.5', 'twenty', '-5%']) {
      expect(problems({ ...minimal, POZY_RATE_LIMIT_RESERVE: reserve })).toEqual([expect.stringMatching(/^POZY_RATE_LIMIT_RESERVE/)]);
    }
    expect(problems({ ...minimal, INITIAL_IMPORT: 'yes' })).toEqual([expect.stringMatching(/^INITIAL_IMPORT must be auto or off/)]);
  });

  it("caps Pozy's pauses and answers, with defaults that hold its longest wait and largest page", () => {
    expect(AppConfig.fromEnvironment(minimal).pozy).toMatchObject({ maxPauseMs: 120_000, maxResponseBytes: 16 * 1024 * 1024 });
    expect(AppConfig.fromEnvironment({ ...minimal, POZY_MAX_PAUSE_MS: '5000', POZY_MAX_RESPONSE_BYTES: '1048576' }).pozy).toMatchObject({
      maxPauseMs: 5_000,
      maxResponseBytes: 1_048_576,
    });
    for (const value of ['999', '3600001', '2m', '-1']) {
      expect(problems({ ...minimal, POZY_MAX_PAUSE_MS: value })).toEqual([expect.stringMatching(/^POZY_MAX_PAUSE_MS/)]);
    }
    for (const value of ['65535', '268435457', '16MiB']) {
      expect(problems({ ...minimal, POZY_MAX_RESPONSE_BYTES: value })).toEqual([expect.stringMatching(/^POZY_MAX_RESPONSE_BYTES/)]);
    }
  });

  describe('read tokens (API_TOKENS) and STATUS_PUBLIC', () => {
    const READ_A = 'read_token_aaaaaaaaaaaa';
    const READ_B = 'read_token_bbbbbbbbbbbb';

    it('leaves reads open and the status public by default', () => {
      expect(AppConfig.fromEnvironment(minimal)).toMatchObject({ readTokens: [], statusPublic: true });
      expect(AppConfig.fromEnvironment({ ...minimal, API_TOKENS: '' }).readTokens).toEqual([]);
    });

    it('reads one token, or two at once for a rotation, and STATUS_PUBLIC=false', () => {
      expect(AppConfig.fromEnvironment({ ...minimal, API_TOKENS: READ_A }).readTokens).toEqual([READ_A]);
      expect(AppConfig.fromEnvironment({ ...minimal, API_TOKENS: `${READ_A},${READ_B}`, STATUS_PUBLIC: 'false' })).toMatchObject({
        readTokens: [READ_A, READ_B],
        statusPublic: false,
      });
      // Base64 tokens keep their padding and symbols.
      expect(AppConfig.fromEnvironment({ ...minimal, API_TOKENS: 'aB3+/_-.~xyzQRSTUV==' }).readTokens).toEqual(['aB3+/_-.~xyzQRSTUV==']);
    });

    it.each([
      ['a trailing comma', `${READ_A},`, /^API_TOKENS must be .*: entry 2 is empty \(a stray comma\?\)$/],
      ['two commas in a row', `${READ_A},,${READ_B}`, /: entry 2 is empty/],
      ['only a comma', ',', /: entry 1 is empty \(a stray comma\?\); entry 2 is empty/],
      ['only spaces', '   ', /: entry 1 is empty/],
      ['a space after a comma', `${READ_A}, ${READ_B}`, /: entry 2 holds a space or a character a Bearer token cannot carry/],
      ['a space inside a token', 'read token aaaaaaaaaaaa', /: entry 1 holds a space/],
      ['a newline at the end', `${READ_A}\n`, /: entry 1 holds a space/],
      ['a quote', `"${READ_A}"`, /: entry 1 holds a space or a character/],
      ['a short token', 'short', /: entry 1 is shorter than 16 characters$/],
      ['the same token twice', `${READ_A},${READ_A}`, /: entry 2 repeats entry 1$/],
    ])('refuses API_TOKENS with %s, naming the entry', (_case, value, message) => {
      expect(problems({ ...minimal, API_TOKENS: value })).toEqual([expect.stringMatching(message)]);
    });

    it('refuses ADMIN_TOKEN among the read tokens: every reader would hold the admin token', () => {
      expect(problems({ ...minimal, ADMIN_TOKEN: READ_B, API_TOKENS: `${READ_A},${READ_B}` })).toEqual([
        expect.stringMatching(/^API_TOKENS must not hold ADMIN_TOKEN/),
      ]);
    });

    it.each([
      ['yes', /^STATUS_PUBLIC must be true or false$/],
      ['1', /^STATUS_PUBLIC must be true or false$/],
      ['TRUE', /^STATUS_PUBLIC must be true or false$/],
      ['', /^STATUS_PUBLIC must be true or false$/],
    ])('refuses STATUS_PUBLIC=%j', (value, message) => {
      expect(problems({ ...minimal, API_TOKENS: READ_A, STATUS_PUBLIC: value })).toEqual([expect.stringMatching(message)]);
    });

    it('refuses STATUS_PUBLIC=false without API_TOKENS: reads, the status included, would be open anyway', () => {
      expect(problems({ ...minimal, ADMIN_TOKEN: 'admin_token_0123456789', STATUS_PUBLIC: 'false' })).toEqual([
        expect.stringMatching(/^STATUS_PUBLIC=false needs API_TOKENS/),
      ]);
      expect(problems({ ...minimal, API_TOKENS: 'none', STATUS_PUBLIC: 'false' })).toEqual([
        expect.stringMatching(/^STATUS_PUBLIC=false needs API_TOKENS/),
      ]);
    });

    it('takes API_TOKENS=none for open reads chosen, in any environment', () => {
      expect(AppConfig.fromEnvironment({ ...minimal, API_TOKENS: 'none' })).toMatchObject({ readTokens: [], openReadsChosen: true });
      expect(AppConfig.fromEnvironment(minimal)).toMatchObject({ readTokens: [], openReadsChosen: false });
      expect(AppConfig.fromEnvironment({ ...minimal, API_TOKENS: READ_A }).openReadsChosen).toBe(false);
      expect(problems({ ...minimal, API_TOKENS: `none,${READ_A}` })).toEqual([expect.stringMatching(/^API_TOKENS must be .*: entry 1 is shorter/)]);
    });

    it('requires API_TOKENS in production, or API_TOKENS=none to leave reads open', () => {
      const required = [
        expect.stringMatching(/^API_TOKENS is required when NODE_ENV=production .*set read tokens, or API_TOKENS=none to leave them open$/),
      ];
      expect(problems({ ...production, API_TOKENS: undefined })).toEqual(required);
      expect(problems({ ...production, API_TOKENS: '' })).toEqual(required);
      expect(AppConfig.fromEnvironment({ ...production, API_TOKENS: 'none' })).toMatchObject({ readTokens: [], openReadsChosen: true });
      expect(AppConfig.fromEnvironment(production).readTokens).toEqual(['read_token_production_1']);
    });

    it('never echoes a read token in its description', () => {
      const described = JSON.stringify(problems({ ...minimal, API_TOKENS: `${READ_A},,${READ_B} ,x9q,${READ_A}` }));
      expect(described).toMatch(/entry 2 is empty.*entry 3 holds a space.*entry 4 is shorter.*entry 5 repeats entry 1/);
      for (const token of [READ_A, READ_B, 'x9q']) expect(described).not.toContain(token);
    });
  });

  describe('NOTIFY_ALLOWED_HOSTS', () => {
    it('allows no internal subscriber by default', () => {
      expect(AppConfig.fromEnvironment(minimal).notify.allowedHosts).toEqual({ names: [], ranges: [] });
      expect(AppConfig.fromEnvironment({ ...minimal, NOTIFY_ALLOWED_HOSTS: '' }).notify.allowedHosts).toEqual({ names: [], ranges: [] });
    });

    it('reads host names, addresses and CIDRs', () => {
      expect(AppConfig.fromEnvironment({ ...minimal, NOTIFY_ALLOWED_HOSTS: 'receiver.internal, 10.0.0.0/8,::1' }).notify.allowedHosts).toEqual({
        names: ['receiver.internal'],
        ranges: [
          { network: '10.0.0.0', prefix: 8, family: 'ipv4' },
          { network: '::1', prefix: 128, family: 'ipv6' },
        ],
      });
    });

    it('names each bad entry', () => {
      expect(problems({ ...minimal, NOTIFY_ALLOWED_HOSTS: '10.0.0.0/40,,*.internal' })).toEqual([
        'NOTIFY_ALLOWED_HOSTS must be comma-separated host names, IP addresses or CIDRs: entry 1 ("10.0.0.0/40") is not a CIDR: its prefix must be 0 to 32; entry 2 is empty (a stray comma?); entry 3 ("*.internal") holds a wildcard: list each host name, or the addresses\' CIDR',
      ]);
    });
  });

  it('starts without POZY_API_KEY, with no environment workspace', () => {
    expect(AppConfig.fromEnvironment({}).pozy.apiKey).toBe('');
  });

  it('requires POZY_WEBHOOK_SECRET and SECRETS_ENCRYPTION_KEY in production', () => {
    expect(AppConfig.fromEnvironment(production).nodeEnv).toBe('production');
    expect(problems({ ...production, POZY_WEBHOOK_SECRET: undefined, SECRETS_ENCRYPTION_KEY: undefined })).toEqual([
      expect.stringMatching(/^POZY_WEBHOOK_SECRET is required when NODE_ENV=production/),
      expect.stringMatching(/^SECRETS_ENCRYPTION_KEY is required when NODE_ENV=production \(subscription secrets would be stored in plaintext\)/),
    ]);
  });

  describe('ADMIN_TOKEN: one token, held to the rule of a read token, in every environment', () => {
    it('takes one of at least 16 characters of letters, digits and -._~+/', () => {
      expect(AppConfig.fromEnvironment({ ...minimal, ADMIN_TOKEN: 'aB3+/_-.~xyzQRSTUV==' }).adminToken).toBe('aB3+/_-.~xyzQRSTUV==');
      expect(AppConfig.fromEnvironment({ ...minimal, ADMIN_TOKEN: '' }).adminToken).toBeUndefined();
    });

    it.each([
      ['one character', 'Q', /: it is shorter than 16 characters$/],
      ['15 characters', 'admin_token_15c', /: it is shorter than 16 characters$/],
      ['a space', 'admin token 0123456789', /: it holds a space or a character a Bearer token cannot carry/],
      ['a comma', 'admin_token_0123,456789', /: it holds a space or a character/],
      ['a newline at the end', 'admin_token_0123456789\n', /: it holds a space or a character/],
    ])('refuses %s, naming ADMIN_TOKEN and never echoing it', (_case, value, message) => {
      for (const env of [minimal, production]) {
        const found = problems({ ...env, ADMIN_TOKEN: value });
        expect(found).toEqual([expect.stringMatching(/^ADMIN_TOKEN must be one token of at least 16 characters/)]);
        expect(found).toEqual([expect.stringMatching(message)]);
        expect(JSON.stringify(found)).not.toContain(value.trim());
      }
    });
  });

  describe('POZY_WEBHOOK_SECRET', () => {
    it('takes two comma-separated secrets while rotating, in their order', () => {
      expect(AppConfig.fromEnvironment({ ...minimal, POZY_WEBHOOK_SECRET: 'whsec_old,whsec_new' }).pozy.webhookSecrets).toEqual([
        'whsec_old',
        'whsec_new',
      ]);
    });

    it('refuses three, an empty entry, a padded one or a repeat, without echoing a secret', () => {
      const described = JSON.stringify([
        ...problems({ ...minimal, POZY_WEBHOOK_SECRET: 'whsec_aa,whsec_bb,whsec_cc' }),
        ...problems({ ...minimal, POZY_WEBHOOK_SECRET: 'whsec_aa,' }),
        ...problems({ ...minimal, POZY_WEBHOOK_SECRET: 'whsec_aa, whsec_bb' }),
        ...problems({ ...minimal, POZY_WEBHOOK_SECRET: 'whsec_aa,whsec_aa' }),
      ]);
      expect(described).toMatch(
        /holds 3 comma-separated secrets; 2 at most.*entry 2 is empty.*entry 2 starts or ends with a space.*entry 2 repeats entry 1/,
      );
      for (const secret of ['whsec_aa', 'whsec_bb', 'whsec_cc']) expect(described).not.toContain(secret);
    });
  });

  describe('SECRETS_ENCRYPTION_KEY', () => {
    const KEY_A = Buffer.alloc(32, 1).toString('base64');
    const KEY_B = Buffer.alloc(32, 2).toString('base64');

    it('reads id:base64 entries, the newest first', () => {
      const config = AppConfig.fromEnvironment({ ...minimal, SECRETS_ENCRYPTION_KEY: `b:${KEY_B},a:${KEY_A}` });
      expect(config.secretsEncryptionKeys).toEqual([
        { id: 'b', key: Buffer.alloc(32, 2) },
        { id: 'a', key: Buffer.alloc(32, 1) },
      ]);
    });

    it('names each bad entry by its place and id, never echoing a key', () => {
      const short = Buffer.alloc(16, 3).toString('base64');
      const described = JSON.stringify(problems({ ...minimal, SECRETS_ENCRYPTION_KEY: `a:${KEY_A},${KEY_B},c:${short},a:${KEY_B},,b c:${KEY_A}` }));
      expect(described).toMatch(
        /entry 2 is not <key id>:<base64 of 32 bytes>.*entry 3 \(key \\"c\\"\) is not the base64 of 32 bytes.*entry 4 repeats key id \\"a\\" of entry 1.*entry 5 is empty.*entry 6's key id must be/,
      );
      for (const key of [KEY_A, KEY_B, short]) expect(described).not.toContain(key);
    });
  });

  describe("the repository's own example secrets (KNOWN_EXAMPLE_SECRETS), refused in production", () => {
    const published = (what: string): unknown =>
      expect.stringMatching(new RegExp(`^${what} is an example this repository publishes .*NODE_ENV=production refuses it`));
    const PUBLISHED_KEY = 'compose-default:R7eJBfmLk1iI6g0jr0xLz7jxo/oFMallut9ptXYU3sE=';
    const OWN_KEY = `k1:${Buffer.alloc(32, 5).toString('base64')}`;

    it.each([
      ['POZY_API_KEY', (value: string) => ({ POZY_API_KEY: value }), 'POZY_API_KEY'],
      ['POZY_WEBHOOK_SECRET', (value: string) => ({ POZY_WEBHOOK_SECRET: value }), 'POZY_WEBHOOK_SECRET'],
      [
        'POZY_WEBHOOK_SECRET, while rotating',
        (value: string) => ({ POZY_WEBHOOK_SECRET: `whsec_own_secret,${value}` }),
        'POZY_WEBHOOK_SECRET entry 2',
      ],
      ['ADMIN_TOKEN', (value: string) => ({ ADMIN_TOKEN: value }), 'ADMIN_TOKEN'],
      ['API_TOKENS', (value: string) => ({ API_TOKENS: `read_token_production_1,${value}` }), 'API_TOKENS entry 2'],
      [
        "DATABASE_URL's password",
        (value: string) => ({ DATABASE_URL: `postgresql://pozy:${encodeURIComponent(value)}@db:5432/pozy` }),
        "DATABASE_URL's password",
      ],
      [
        "DATABASE_URL's password parameter",
        (value: string) => ({ DATABASE_URL: `postgresql://pozy@db:5432/pozy?password=${encodeURIComponent(value)}` }),
        "DATABASE_URL's password",
      ],
      [
        "DATABASE_READ_URL's password",
        (value: string) => ({ DATABASE_READ_URL: `postgresql://pozy:${encodeURIComponent(value)}@replica:5432/pozy` }),
        "DATABASE_READ_URL's password",
      ],
    ])('refuses each of them as %s, naming it and never the value', (_case, env, what) => {
      for (const value of KNOWN_EXAMPLE_SECRETS) {
        const found = problems({ ...production, ...env(value) });
        expect(found).toContainEqual(published(what));
        expect(JSON.stringify(found)).not.toContain(value);
      }
    });

    it('takes them outside production: the simulator profile and the demo run with them', () => {
      expect(
        AppConfig.fromEnvironment({
          DATABASE_URL: 'postgresql://pozy:pozy@postgres:5432/pozy_sync',
          POZY_API_KEY: 'sk_sim_local',
          POZY_WEBHOOK_SECRET: 'whsec_simulator_secret',
          ADMIN_TOKEN: 'simulator-admin-token',
          SECRETS_ENCRYPTION_KEY: PUBLISHED_KEY,
        }).adminToken,
      ).toBe('simulator-admin-token');
    });

    it('refuses a published encryption key as the one that encrypts, under any key id, but lets it follow your own to re-encrypt', () => {
      expect(problems({ ...production, SECRETS_ENCRYPTION_KEY: PUBLISHED_KEY })).toEqual([
        expect.stringMatching(
          /^SECRETS_ENCRYPTION_KEY entry 1 \(key "compose-default"\) is an example this repository publishes .*npm run secrets:reencrypt/,
        ),
      ]);
      const renamed = PUBLISHED_KEY.replace('compose-default:', 'k7:');
      expect(problems({ ...production, SECRETS_ENCRYPTION_KEY: `${renamed},${OWN_KEY}` })).toEqual([
        expect.stringMatching(/^SECRETS_ENCRYPTION_KEY entry 1 \(key "k7"\) is an example/),
      ]);
      expect(AppConfig.fromEnvironment({ ...production, SECRETS_ENCRYPTION_KEY: `${OWN_KEY},${PUBLISHED_KEY}` }).secretsEncryptionKeys).toHaveLength(
        2,
      );
    });

    it('names every published value at once', () => {
      expect(
        problems({
          ...production,
          POZY_API_KEY: 'sk_sim_local',
          POZY_WEBHOOK_SECRET: 'whsec_simulator_secret',
          ADMIN_TOKEN: 'simulator-admin-token',
          SECRETS_ENCRYPTION_KEY: PUBLISHED_KEY,
          DATABASE_URL: 'postgresql://pozy:pozy@postgres:5432/pozy_sync',
        }),
      ).toEqual([
        published('POZY_API_KEY'),
        published('POZY_WEBHOOK_SECRET'),
        published('ADMIN_TOKEN'),
        published("DATABASE_URL's password"),
        expect.stringMatching(/^SECRETS_ENCRYPTION_KEY entry 1/),
      ]);
    });
  });

  it('refuses production data on the embedded PostgreSQL unless EMBEDDED_DATABASE=allow chooses it', () => {
    const embedded = { ...production, DATABASE_URL: undefined };

    expect(problems(embedded)).toEqual([expect.stringMatching(/^DATABASE_URL is required when NODE_ENV=production .*set EMBEDDED_DATABASE=allow/)]);
    expect(AppConfig.fromEnvironment({ ...embedded, EMBEDDED_DATABASE: 'allow' }).databaseUrl).toBeUndefined();
    expect(AppConfig.fromEnvironment({ ...embedded, DATABASE_URL: 'postgresql://u:p@db:5432/pozy' }).databaseUrl).toBe(
      'postgresql://u:p@db:5432/pozy',
    );
    // Outside production the embedded PostgreSQL needs no choice.
    expect(AppConfig.fromEnvironment(minimal).databaseUrl).toBeUndefined();
    expect(problems({ ...embedded, EMBEDDED_DATABASE: 'yes' })).toContainEqual(expect.stringMatching(/^EMBEDDED_DATABASE must be "allow" or unset/));
  });

  it('never echoes values it was not asked about', () => {
    const config = AppConfig.fromEnvironment({ ...minimal, AWS_SECRET_ACCESS_KEY: 'hunter2' });
    expect(JSON.stringify(config)).not.toContain('hunter2');
  });
});

describe('VARIABLES', () => {
  // EnvironmentVariables' fields are VARIABLES' declarations with their validators applied: a declaration without one
  // would take any value, and a field with no declaration would never be read.
  it('gives every declared variable its validators, and EnvironmentVariables no other field', () => {
    const fields = [
      ...new Set(
        getMetadataStorage()
          .getTargetValidationMetadatas(EnvironmentVariables, '', false, false)
          .map((m) => m.propertyName),
      ),
    ];
    const listed: readonly string[] = Object.keys(VARIABLES);
    expect({
      missingFromVariables: fields.filter((name) => !listed.includes(name)),
      notAField: listed.filter((name) => !fields.includes(name)),
    }).toEqual({
      missingFromVariables: [],
      notAField: [],
    });
  });
});

describe("docs/configuration.md's table", () => {
  it('documents every variable the service reads, as the declarations say', () => {
    const doc = readFileSync(join(__dirname, '..', '..', 'docs', 'configuration.md'), 'utf8');
    // The whole file is generated: a drift names the command that writes it.
    expect({ upToDate: doc === configurationDoc(), fix: DOCS_CONFIG_COMMAND }).toEqual({ upToDate: true, fix: DOCS_CONFIG_COMMAND });
    const start = doc.indexOf('\n## Variables\n');
    const end = doc.indexOf('\n## ', start + 1);
    const table = doc.slice(start, end === -1 ? undefined : end);
    expect(start).toBeGreaterThan(-1);
    expect(table).toContain('| variable | meaning | default |');
    expect(Object.keys(VARIABLES).filter((name) => !table.includes(`\`${name}\``))).toEqual([]);
  });
});
