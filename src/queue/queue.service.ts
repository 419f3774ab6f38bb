import { Injectable, OnModuleInit } from '@nestjs/common';
import { runMigrations } from 'graphile-worker';
import { DatabaseService } from '../database/database.service';
import { graphileLogger } from './graphile-logger';

/**
 * graphile-worker's schema is its own, installed here before anything can enqueue (JobQueueRepository.addJobs is
 * how jobs are added).
 */
@Injectable()
export class QueueService implements OnModuleInit {
  constructor(private readonly database: DatabaseService) {}

  async onModuleInit(): Promise<void> {
    await runMigrations({ pgPool: this.database.pool, logger: graphileLogger });
  }
}
