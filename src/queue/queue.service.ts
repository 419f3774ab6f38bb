import { Injectable, OnModuleInit } from '@nestjs/common';
import { runMigrations } from 'graphile-worker';
import type { PoolClient } from 'pg';
import { DatabaseService } from '../database/database.service';
import { graphileLogger } from './graphile-logger';
import { ADD_JOBS_SQL, addJobsParams, JobSpec } from './job-sql';

/** Enqueues jobs. Its schema is graphile-worker's own, installed here before anything can enqueue. */
@Injectable()
export class QueueService implements OnModuleInit {
  constructor(private readonly database: DatabaseService) {}

  async onModuleInit(): Promise<void> {
    await runMigrations({ pgPool: this.database.pool, logger: graphileLogger });
  }

  /** Adds jobs in one statement (see ADD_JOBS_SQL); pass `client` to make them part of its open transaction. */
  async addJobs(specs: readonly JobSpec[], client?: PoolClient): Promise<number> {
    if (specs.length === 0) return 0;
    const { rows } = await (client ?? this.database.pool).query<{ added: number }>(ADD_JOBS_SQL, addJobsParams(specs));
    return rows[0].added;
  }
}
