import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { Kysely, PostgresDialect } from 'kysely';
import { AppConfig } from '../config/app-config';
import type { DB } from '../generated/kysely/database';
import { ConnectionMonitor } from './connection-monitor';
import { FailoverPool } from './failover-pool';
import { ensureLogicalPublication, PublicationState } from './logical-publication';
import { MIGRATION_LOCK_RETRIES, Migrator } from './migrator';
import { preparingPool } from './prepared-statements';

/**
 * The typed statement builder over pozy-sync's own tables. Its table and column types are generated from
 * prisma/schema.prisma (prisma-kysely), so a statement naming a column the schema lacks fails the build.
 * A transaction (`db.transaction().execute(async (trx) => ...)`) is a `Db` too.
 */
export type Db = Kysely<DB>;

/**
 * prisma/migrations, from src/database (tests), dist/database (the built service) and dist-tools/src/database (the
 * bench and the demo) alike: the nearest folder up that holds it.
 */
export const MIGRATIONS_DIR = findUp(__dirname, join('prisma', 'migrations'));

function findUp(from: string, relative: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, relative))) return join(dir, relative);
    if (dirname(dir) === dir) throw new Error(`No ${relative} above ${from}`);
  }
}

/**
 * One pg pool per process, so a replica's connection count is bounded by DATABASE_POOL_SIZE.
 * `db`: Kysely, the typed way onto it for every statement (guarded upserts with their outbox in one statement, group
 * commit, SKIP LOCKED claims, advisory locks, planner estimates) and for transactions. It runs on pg directly rather
 * than through Prisma Client's raw-query path, which re-serialises every parameter of a batch such as the receive
 * path's group commit.
 * `pool` itself is for graphile-worker (its own schema, behind queue/) and the migrator only.
 */
@Injectable()
export class DatabaseService implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(DatabaseService.name);
  readonly pool: FailoverPool;
  readonly db: Db;
  private readonly publicationName: string | null;
  private publicationState: PublicationState | null = null;
  private readonly migrator: Migrator;
  private readonly migrateOnStart: boolean;

  constructor(config: AppConfig, monitor: ConnectionMonitor) {
    this.publicationName = config.logicalPublication;
    // Every connection is checked to lead to a server that takes writes (failover-pool.ts).
    this.pool = new FailoverPool({
      endpoint: config.databaseEndpoint(),
      name: 'main',
      observer: monitor,
      max: config.databasePoolSize,
      application_name: 'pozy-sync',
      // A database that cannot give a connection within this fails the request instead of stalling it.
      connectionTimeoutMillis: 2_000,
      // A primary that vanished (a host fault) is noticed by the kernel, not after the TCP retransmissions give up.
      keepAlive: true,
    });
    monitor.track(this.pool);
    this.migrateOnStart = config.migrateOnStart;
    this.migrator = new Migrator(this.pool, MIGRATIONS_DIR, { lockTimeoutMs: config.migrationLockTimeoutMs, lockRetries: MIGRATION_LOCK_RETRIES });
    // Statements marked `prepare` (database/precompiled.ts) go by name: parsed and planned once per connection.
    this.db = new Kysely<DB>({ dialect: new PostgresDialect({ pool: preparingPool(this.pool) }) });
  }

  async onModuleInit(): Promise<void> {
    // Otherwise main.ts waited until `npm run migrate` had applied them (schema-gate.ts).
    if (this.migrateOnStart) await this.migrator.migrate();
    // After the migrations, which make the tables it publishes; every replica checks, under one lock.
    if (this.publicationName) this.publicationState = await ensureLogicalPublication(this.db, this.publicationName, this.logger);
  }

  /** How LOGICAL_PUBLICATION's publication stood after this process's boot; null when the variable is unset. */
  get logicalPublication(): PublicationState | null {
    return this.publicationState;
  }

  /** Migrations this version ships that the database has not applied (another replica may be mid-upgrade). */
  pendingMigrations(): Promise<string[]> {
    return this.migrator.pending();
  }

  async onApplicationShutdown(): Promise<void> {
    // Kysely's destroy() would end the shared pool too; it holds nothing else.
    await this.pool.end();
  }
}
