import { join } from 'node:path';
import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { PrismaPg } from '@prisma/adapter-pg';
import { Pool, PoolClient } from 'pg';
import { AppConfig } from '../config/app-config';
import { PrismaClient } from '../generated/prisma/client';
import { Migrator } from './migrator';

/** Where a repository's statement runs: the pool, or a caller's client inside its transaction. */
export type Queryable = Pool | PoolClient;

/** prisma/migrations, from src/database (tests) and dist/database (the built service) alike. */
export const MIGRATIONS_DIR = join(__dirname, '..', '..', 'prisma', 'migrations');

/**
 * One pg pool per process, shared by Prisma (typed queries), the hot ingest path (one raw statement) and
 * graphile-worker, so a replica's connection count is bounded by DATABASE_POOL_SIZE.
 */
@Injectable()
export class DatabaseService implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(DatabaseService.name);
  readonly pool: Pool;
  readonly prisma: PrismaClient;

  constructor(config: AppConfig) {
    this.pool = new Pool({
      connectionString: config.requireDatabaseUrl(),
      max: config.databasePoolSize,
      application_name: 'pozy-sync',
      // A database that cannot give a connection within this fails the request instead of stalling it.
      connectionTimeoutMillis: 2_000,
    });
    // An idle client losing its connection must not crash the process; the pool replaces it.
    this.pool.on('error', (error) => this.logger.warn(`Idle database connection failed: ${error.message}`));
    this.pool.on('connect', (client) =>
      client.on('error', (error) => this.logger.warn(`Database connection failed: ${error.message}`)),
    );
    this.prisma = new PrismaClient({ adapter: new PrismaPg(this.pool) });
  }

  async onModuleInit(): Promise<void> {
    await new Migrator(this.pool, MIGRATIONS_DIR).migrate();
  }

  /** Migrations this version ships that the database has not applied (another replica may be mid-upgrade). */
  pendingMigrations(): Promise<string[]> {
    return new Migrator(this.pool, MIGRATIONS_DIR).pending();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.prisma.$disconnect();
    await this.pool.end();
  }
}
