import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { Kysely, PostgresDialect, sql } from 'kysely';
import type { Counter } from 'prom-client';
import { type Consistency, REPLICA_LAG_SAMPLE_MS } from '../common/read-consistency';
import { WakeableLoop } from '../common/wakeable-loop';
import { AppConfig } from '../config/app-config';
import type { DB } from '../generated/kysely/database';
import { MetricsService } from '../metrics/metrics.service';
import { ConnectionMonitor } from './connection-monitor';
import { DatabaseService, Db } from './database.service';
import { FailoverPool } from './failover-pool';
import { queryPoolOptions, QueryPool } from './query-pool';
import { LagTracker, parseLsn } from './replica-lag';

/** Where one request reads. */
export interface ReadTarget {
  db: Db;
  fromReplica: boolean;
}

/** A sample that has not succeeded for this long makes the replica unavailable (a wedged connection, say). */
const STALE_AFTER_MS = 3_000;
/** One sample's statement; beyond it the replica counts as unreachable. */
const SAMPLE_TIMEOUT_MS = 1_000;

/** pg's connection failures, and SQLSTATE classes 08 (connection exception) and 57P (operator intervention: shutdown). */
const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EPIPE']);
const CONNECTION_MESSAGES = /Connection terminated|timeout exceeded when trying to connect|Query read timeout|connection is closed/i;
/** 40001 on a standby: a statement cancelled by a conflict with recovery (replay removed rows it still needed). */
const RECOVERY_CONFLICT = '40001';

function errorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** The replica could not serve the read (unreachable, shutting down, the wrong kind of server): the primary will. */
export function isConnectionError(error: unknown): boolean {
  const code = errorCode(error);
  // 25006: the endpoint led to a server of the wrong kind (failover-pool.ts's WrongServerError), which cannot serve it.
  if (code !== undefined && (CONNECTION_CODES.has(code) || code.startsWith('08') || code.startsWith('57P') || code === '25006')) return true;
  return error instanceof Error && CONNECTION_MESSAGES.test(error.message);
}

/**
 * The read replica (DATABASE_READ_URL): a streaming standby of the primary that the query endpoints read from unless
 * a request asks for `consistency=strong`. Its own pool (DATABASE_READ_POOL_SIZE, with the query pool's statement
 * timeout) and Kysely `Db`; no Prisma Client, since the query code reads through Kysely only.
 *
 * A sampler reads the primary's flushed WAL position, then the replica's replay position, every REPLICA_LAG_SAMPLE_MS; the
 * lag (replica-lag.ts) is computed from those when an answer is sent. The replica is used only while its samples
 * succeed and it is a standby of the primary's cluster on the same database: otherwise (unreachable, promoted,
 * another server) reads go to the primary, with a warning and `pozy_sync_replica_fallbacks_total`, until a sample
 * succeeds again. A read that fails on the replica for want of it is run again on the primary (see replica-read.ts).
 */
@Injectable()
export class ReadReplica implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(ReadReplica.name);
  private readonly replica: { pool: FailoverPool; db: Db } | undefined;
  private readonly tracker = new LagTracker();
  private readonly sampler: WakeableLoop | undefined;
  private readonly fallbacks: Counter<'reason'>;
  /** Why the replica is not used now; undefined: it is. */
  private unavailable: string | undefined = 'not sampled yet';
  private lastSampleAt = 0;

  constructor(
    config: AppConfig,
    private readonly database: DatabaseService,
    private readonly queries: QueryPool,
    metrics: MetricsService,
    monitor: ConnectionMonitor,
  ) {
    this.fallbacks = metrics.counter({
      name: 'pozy_sync_replica_fallbacks_total',
      help: 'Reads that asked for the read replica but went to the primary: it was unavailable (unavailable), or failed during the read (failed)',
      labelNames: ['reason'] as const,
    });
    // ROLE=worker serves no query endpoint: no pool, no sampling.
    if (config.databaseReadUrl === undefined || !config.servesHttp) return;
    // Its hosts and target_session_attrs as written (`any` unless the URL says): the lag samples decide what it serves.
    const pool = new FailoverPool({
      endpoint: config.readEndpoint() ?? config.databaseEndpoint(),
      name: 'read',
      observer: monitor,
      max: config.databaseReadPoolSize,
      application_name: 'pozy-sync-read',
      ...queryPoolOptions(config),
    });
    this.replica = { pool, db: new Kysely<DB>({ dialect: new PostgresDialect({ pool }) }) };
    this.sampler = new WakeableLoop({
      pass: () => this.sample().then(() => Date.now() + REPLICA_LAG_SAMPLE_MS),
      idleMs: REPLICA_LAG_SAMPLE_MS,
      retryMs: REPLICA_LAG_SAMPLE_MS,
      logger: this.logger,
      what: 'Sampling the read replica',
    });
    metrics.publishGauges(
      {
        available: {
          name: 'pozy_sync_replica_available',
          help: 'Whether the read replica (DATABASE_READ_URL) serves reads now (1) or they go to the primary (0)',
        },
        lag: {
          name: 'pozy_sync_replica_lag_seconds',
          help: "How far the read replica's replay is behind the primary (absent while it is unavailable)",
        },
      },
      async (gauges) => {
        gauges.available.set(this.available ? 1 : 0);
        const lag = this.lagMs();
        if (this.available && lag !== undefined) gauges.lag.set(lag / 1000);
        else gauges.lag.reset();
      },
    );
  }

  /** A first sample before the service listens, so reads use the replica from the first request when it answers. */
  async onModuleInit(): Promise<void> {
    if (!this.sampler) return;
    await this.sample();
    if (this.unavailable !== undefined)
      this.logger.warn(`Read replica unavailable at start (${this.unavailable}): reads go to the primary until it answers`);
    this.sampler.start(REPLICA_LAG_SAMPLE_MS);
  }

  async onApplicationShutdown(): Promise<void> {
    await this.sampler?.stop();
    await this.replica?.pool.end();
  }

  get configured(): boolean {
    return this.replica !== undefined;
  }

  private get available(): boolean {
    return this.unavailable === undefined && Date.now() - this.lastSampleAt < STALE_AFTER_MS;
  }

  /** Where a read runs: the replica, unless `strong` is asked for, none is configured, or it is unavailable. */
  target(consistency: Consistency): ReadTarget {
    if (this.replica === undefined || consistency === 'strong') return this.primary();
    if (!this.available) {
      this.fallbacks.inc({ reason: 'unavailable' });
      return this.primary();
    }
    return { db: this.replica.db, fromReplica: true };
  }

  /** The primary, through the query endpoints' own pool (query-pool.ts), never the one the receiver and the worker use. */
  primary(): ReadTarget {
    return { db: this.queries.db, fromReplica: false };
  }

  /** Ms the replica is behind now (see LagTracker); undefined when it is not known. */
  lagMs(): number | undefined {
    return this.tracker.lagMs(Date.now());
  }

  /**
   * A read on the replica failed: whether to run it again on the primary. Yes when the replica could not serve it
   * (unreachable: it is then unavailable until a sample succeeds; or a recovery conflict cancelled it).
   */
  readFailed(error: unknown): boolean {
    const unreachable = isConnectionError(error);
    if (!unreachable && errorCode(error) !== RECOVERY_CONFLICT) return false;
    if (unreachable) this.markUnavailable(error instanceof Error ? error.message : String(error));
    this.fallbacks.inc({ reason: 'failed' });
    return true;
  }

  private async sample(): Promise<void> {
    const replica = this.replica!;
    let primary: { lsn: string; system: string; database: string };
    try {
      primary = await withTimeout(
        sql<{ lsn: string; system: string; database: string }>`
          SELECT pg_current_wal_flush_lsn()::text AS lsn, (SELECT system_identifier FROM pg_control_system())::text AS system,
                 current_database() AS database`
          .execute(this.database.db)
          .then((result) => result.rows[0]),
      );
    } catch (error) {
      // Without the primary the lag cannot be measured: the reads' own failures tell whether the replica still serves.
      this.logger.debug(`Sampling the primary's WAL position failed: ${error instanceof Error ? error.message : String(error)}`);
      return;
    }
    this.tracker.primaryAt(parseLsn(primary.lsn), Date.now());
    try {
      const standby = await withTimeout(
        sql<{ standby: boolean; lsn: string | null; system: string; database: string }>`
          SELECT pg_is_in_recovery() AS standby, pg_last_wal_replay_lsn()::text AS lsn,
                 (SELECT system_identifier FROM pg_control_system())::text AS system, current_database() AS database`
          .execute(replica.db)
          .then((result) => result.rows[0]),
      );
      if (!standby.standby || standby.lsn === null)
        return this.markUnavailable('it is not a standby in recovery (promoted, or not a streaming replica)');
      if (standby.system !== primary.system)
        return this.markUnavailable(`it replicates another cluster (system ${standby.system}, the primary's is ${primary.system})`);
      if (standby.database !== primary.database)
        return this.markUnavailable(`it names database ${standby.database}, the primary's is ${primary.database}`);
      this.tracker.replayedTo(parseLsn(standby.lsn));
      this.lastSampleAt = Date.now();
      if (this.unavailable !== undefined && this.unavailable !== 'not sampled yet')
        this.logger.log('Read replica available again: eventual reads go to it');
      this.unavailable = undefined;
    } catch (error) {
      this.markUnavailable(error instanceof Error ? error.message : String(error));
    }
  }

  private markUnavailable(reason: string): void {
    if (this.unavailable === undefined) this.logger.warn(`Read replica unavailable (${reason}): reads go to the primary until it answers again`);
    this.unavailable = reason;
    this.tracker.reset();
  }
}

function withTimeout<T>(promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${SAMPLE_TIMEOUT_MS} ms`)), SAMPLE_TIMEOUT_MS);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
