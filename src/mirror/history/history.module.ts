import { Module } from '@nestjs/common';
import { HistoryRepository } from './history.repository';
import { HistoryService } from './history.service';

/** A post's and an account's versions (resource_version): written by the mirror writes, read by their controllers. */
@Module({
  providers: [HistoryRepository, HistoryService],
  exports: [HistoryRepository, HistoryService],
})
export class HistoryModule {}
