import { Global, Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { JobQueueRepository } from './job-queue.repository';
import { QueueService } from './queue.service';
import { WorkerService } from './worker.service';

@Global()
@Module({
  imports: [DiscoveryModule],
  providers: [QueueService, JobQueueRepository, WorkerService],
  exports: [QueueService, JobQueueRepository, WorkerService],
})
export class QueueModule {}
