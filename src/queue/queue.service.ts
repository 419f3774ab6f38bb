import { Injectable, OnModuleInit } from '@nestjs/common';
import { runMigrations } from 'graphile-worker';
import type { PoolClient } from 'pg';
import { DatabaseService } from '../database/database.service';
import { graphileLogger } from './graphile-logger';
import { ADD_JOBS_SQL, addJobsParams, JobSpec } from './job-sql';

export interface AddedJob {
  id: string;
  key: string | null;
}

/** Enqueues jobs. Its schema is graphile-worker's own, installed here before anything can enqueue. */
@Injectable()
export class QueueService implements OnModuleInit {
  constructor(private readonly database: DatabaseService) {}

  async onModuleInit(): Promise<void> {
    await runMigrations({ pgPool: this.database.pool, logger: graphileLogger });
  }

  /**
   * Adds jobs in one statement; pass `client` to make them part of its open transaction. With `preserveRunAt`,
   * a pending job with the same key keeps its run time (a stream of additions cannot postpone it forever).
   */
  async addJobs(specs: readonly JobSpec[], options: { client?: PoolClient; preserveRunAt?: boolean } = {}): Promise<AddedJob[]> {
    if (specs.length === 0) return [];
    const { rows } = await (options.client ?? this.database.pool).query<AddedJob>(
      ADD_JOBS_SQL,
      addJobsParams(specs, options.preserveRunAt ?? true),
    );
    return rows;
  }
}
