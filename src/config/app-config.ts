import { LogLevel } from '@nestjs/common';
import { DatabaseEndpoint, parseDatabaseUrl } from './database-url';
import { keyValuePairs, LOG_LEVELS, OPEN_READS, OtlpProtocol, TraceSamplerName } from './environment';
import { declaredConfig, DeclaredConfig, Environment, validateEnvironment } from './variables';

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

function tracingOf(env: Environment): TracingConfig | null {
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

const Declared = class {} as unknown as new () => DeclaredConfig;

/**
 * The service's configuration, validated once at boot. Inject this class; nothing else reads process.env. Each
 * variable's own property comes from its declaration in variables.ts; the properties below combine several.
 */
export class AppConfig extends Declared {
  /** LOG_LEVEL and every level above it. */
  readonly logLevels: LogLevel[];
  /** `API_TOKENS=none`: the query endpoints are open by the operator's choice, not for want of a setting. */
  readonly openReadsChosen: boolean;
  /** Where and how spans are exported; null (no OTLP endpoint set): tracing is off and no exporter starts. */
  readonly tracing: TracingConfig | null;

  private constructor(env: Environment) {
    super();
    Object.assign(this, declaredConfig(env));
    this.logLevels = LOG_LEVELS.slice(0, LOG_LEVELS.indexOf(env.LOG_LEVEL) + 1);
    this.openReadsChosen = env.API_TOKENS === OPEN_READS;
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

  /** DATABASE_URL's hosts and the session the service needs on them: a server that takes writes unless it says otherwise. */
  databaseEndpoint(): DatabaseEndpoint {
    return parseDatabaseUrl(this.requireDatabaseUrl(), 'read-write');
  }

  /** DATABASE_READ_URL's hosts: any server, a standby as much as a primary, unless it says otherwise. */
  readEndpoint(): DatabaseEndpoint | undefined {
    return this.databaseReadUrl === undefined ? undefined : parseDatabaseUrl(this.databaseReadUrl, 'any');
  }
}
