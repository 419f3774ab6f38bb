import { Injectable, OnApplicationShutdown } from '@nestjs/common';
import { Kysely, PostgresDialect } from 'kysely';
import { PoolConfig } from 'pg';
import { ApiError } from '../common/api-error';
import { isNoConnection, isStatementTimeout } from '../common/database-errors';
import { AppConfig } from '../config/app-config';
import type { DB } from '../generated/kysely/database';
import { ConnectionMonitor } from './connection-monitor';
import type { Db } from './database.service';
import { FailoverPool } from './failover-pool';

/** How long a query waits for one of the pool's connections before it is refused (and how long a connect may take). */
export const QUERY_CONNECTION_WAIT_MS = 2_000;
/** A query refused because every connection stayed busy: soon, since each is held at most a statement timeout. */
const BUSY_RETRY_AFTER_S = 1;
/** A query that ran out of time: not at once, since the same query on the same load would again. */
const TIMEOUT_RETRY_AFTER_S = 5;

/**
 * What every pool of the query endpoints shares (this one on the primary, and the read replica's): each statement is
 * cut after QUERY_STATEMENT_TIMEOUT_MS, set once per connection when it connects (no round trip per query), and a
 * request waits at most QUERY_CONNECTION_WAIT_MS for a connection. No parallel workers: a page reads a few hundred
 * rows, and on a table large enough for PostgreSQL to plan a Gather (half a million posts), starting its worker took
 * 5 ms of a filter's 5.4 ms that matched nothing (0.03 ms in the index), a third of the throughput.
 */
export function queryPoolOptions(config: AppConfig): Pick<PoolConfig, 'statement_timeout' | 'connectionTimeoutMillis' | 'options'> {
  return {
    statement_timeout: config.queryStatementTimeoutMs,
    connectionTimeoutMillis: QUERY_CONNECTION_WAIT_MS,
    options: '-c max_parallel_workers_per_gather=0',
  };
}

/**
 * The query endpoints' own pool on the primary (GET /posts, /accounts, /changes and their `/:id` and `/head`):
 * DATABASE_QUERY_POOL_SIZE connections apart from DATABASE_POOL_SIZE, so that however many slow reads arrive, they
 * wait for one of these and never for a connection the webhook receiver or the worker needs. Past the wait, and past
 * the statement timeout, the request is answered a clear 503 (`queryRefusal`, through `@ReplicaRead()`'s interceptor).
 */
@Injectable()
export class QueryPool implements OnApplicationShutdown {
  readonly pool: FailoverPool;
  readonly db: Db;

  constructor(config: AppConfig, monitor: ConnectionMonitor) {
    // Reads that must be fresh (and the writes of a `/head`): on the primary, checked like every write pool.
    this.pool = new FailoverPool({
      endpoint: config.databaseEndpoint(),
      name: 'query',
      observer: monitor,
      max: config.databaseQueryPoolSize,
      application_name: 'pozy-sync-query',
      ...queryPoolOptions(config),
      keepAlive: true,
    });
    monitor.track(this.pool);
    this.db = new Kysely<DB>({ dialect: new PostgresDialect({ pool: this.pool }) });
  }

  async onApplicationShutdown(): Promise<void> {
    await this.pool.end();
  }
}

/**
 * The 503 a query's failure answers when the cause is time or capacity rather than the query itself (so retrying later
 * may succeed, and a bug still answers 500); undefined for any other failure.
 */
export function queryRefusal(error: unknown): ApiError | undefined {
  if (isStatementTimeout(error)) {
    return new ApiError(
      'query_timeout',
      'The query ran longer than QUERY_STATEMENT_TIMEOUT_MS allows and was stopped: narrow it (rarer words, no phrase of common words) or try again later',
      undefined,
      TIMEOUT_RETRY_AFTER_S,
    );
  }
  if (isNoConnection(error)) {
    return new ApiError(
      'overloaded',
      `No database connection for queries came free within ${QUERY_CONNECTION_WAIT_MS} ms (DATABASE_QUERY_POOL_SIZE, or the server's own limit); try again shortly`,
      undefined,
      BUSY_RETRY_AFTER_S,
    );
  }
  return undefined;
}
