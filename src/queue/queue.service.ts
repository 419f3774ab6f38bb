import { Injectable, OnModuleInit } from '@nestjs/common';
import { runMigrations } from 'graphile-worker';
import type { PoolClient } from 'pg';
import { DatabaseService } from '../database/database.service';
import { addJobCall, addJobParams, JobSpec } from './job-sql';
import { TaskName } from './tasks';
import { graphileLogger } from './graphile-logger';

/** Enqueues jobs. Its schema is graphile-worker's own, installed here before anything can enqueue. */
@Injectable()
export class QueueService implements OnModuleInit {
  constructor(private readonly database: DatabaseService) {}

  async onModuleInit(): Promise<void> {
    await runMigrations({ pgPool: this.database.pool, logger: graphileLogger });
  }

  /** Adds a job; pass `client` to make it part of that client's open transaction. */
  async enqueue<N extends TaskName>(spec: JobSpec<N>, client?: PoolClient): Promise<string> {
    const { rows } = await (client ?? this.database.pool).query<{ id: string }>(
      `SELECT (${addJobCall(1)}).id::text AS id`,
      addJobParams(spec),
    );
    return rows[0].id;
  }
}
