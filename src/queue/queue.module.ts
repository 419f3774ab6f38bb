import { Global, Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { QueueService } from './queue.service';
import { WorkerService } from './worker.service';

@Global()
@Module({
  imports: [DiscoveryModule],
  providers: [QueueService, WorkerService],
  exports: [QueueService, WorkerService],
})
export class QueueModule {}
