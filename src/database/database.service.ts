import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { Kysely, PostgresDialect } from 'kysely';
import { Pool } from 'pg';
import { AppConfig } from '../config/app-config';
import type { DB } from '../generated/kysely/database';
import type { PrismaClient } from '../generated/prisma/client';
import { ensureLogicalPublication, PublicationState } from './logical-publication';
import { Migrator } from './migrator';

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
 * One pg pool per process, so a replica's connection count is bounded by DATABASE_POOL_SIZE. Two typed ways onto it:
 * - `prisma`: Prisma Client's API, for what it expresses (lookups, filtered lists, counts, plain inserts/updates).
 * - `db`: Kysely, for the statements Prisma's API cannot (guarded upserts with their outbox in one statement, group
 *   commit, SKIP LOCKED claims, advisory locks, planner estimates) and for transactions that mix them. It runs on pg
 *   directly: executing the receive path's group-commit insert through Prisma Client's raw-query path cut the
 *   receive bench (ROLE=api) from 1.16x to 0.70x of the baseline's throughput, since Prisma re-serialises every
 *   parameter of a batch.
 * `pool` itself is for graphile-worker (its own schema, behind queue/) and the migrator only.
 */
@Injectable()
export class DatabaseService implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(DatabaseService.name);
  readonly pool: Pool;
  readonly db: Db;
  private prismaClient: PrismaClient | undefined;
  private readonly publicationName: string | null;
  private publicationState: PublicationState | null = null;

  constructor(config: AppConfig) {
    this.publicationName = config.logicalPublication;
    this.pool = new Pool({
      connectionString: config.requireDatabaseUrl(),
      max: config.databasePoolSize,
      application_name: 'pozy-sync',
      // A database that cannot give a connection within this fails the request instead of stalling it.
      connectionTimeoutMillis: 2_000,
    });
    // An idle client losing its connection must not crash the process; the pool replaces it.
    this.pool.on('error', (error) => this.logger.warn(`Idle database connection failed: ${error.message}`));
    this.pool.on('connect', (client) => client.on('error', (error) => this.logger.warn(`Database connection failed: ${error.message}`)));
    this.db = new Kysely<DB>({ dialect: new PostgresDialect({ pool: this.pool }) });
  }

  /**
   * Prisma Client, loaded on first use: its query compiler (WebAssembly) holds about 95 MB of the process once
   * loaded, and no path a replica runs while idle or receiving needs it.
   */
  get prisma(): PrismaClient {
    if (!this.prismaClient) {
      /* eslint-disable @typescript-eslint/no-require-imports -- loaded on demand, see above */
      const { PrismaClient: Client } = require('../generated/prisma/client') as typeof import('../generated/prisma/client');
      const { PrismaPg } = require('@prisma/adapter-pg') as typeof import('@prisma/adapter-pg');
      /* eslint-enable @typescript-eslint/no-require-imports */
      this.prismaClient = new Client({ adapter: new PrismaPg(this.pool) });
    }
    return this.prismaClient;
  }

  async onModuleInit(): Promise<void> {
    await new Migrator(this.pool, MIGRATIONS_DIR).migrate();
    // After the migrations, which make the tables it publishes; every replica checks, under one lock.
    if (this.publicationName) this.publicationState = await ensureLogicalPublication(this.db, this.publicationName, this.logger);
  }

  /** How LOGICAL_PUBLICATION's publication stood after this process's boot; null when the variable is unset. */
  get logicalPublication(): PublicationState | null {
    return this.publicationState;
  }

  /** Migrations this version ships that the database has not applied (another replica may be mid-upgrade). */
  pendingMigrations(): Promise<string[]> {
    return new Migrator(this.pool, MIGRATIONS_DIR).pending();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.prismaClient?.$disconnect();
    // Kysely's destroy() would end the shared pool too; it holds nothing else.
    await this.pool.end();
  }
}
