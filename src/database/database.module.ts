import { Global, Module } from '@nestjs/common';
import { ConnectionMonitor } from './connection-monitor';
import { DatabaseService } from './database.service';
import { PrimaryWatch } from './primary-watch';
import { TableStatistics } from './table-statistics';

@Global()
@Module({
  providers: [ConnectionMonitor, DatabaseService, PrimaryWatch, TableStatistics],
  exports: [ConnectionMonitor, DatabaseService, PrimaryWatch, TableStatistics],
})
export class DatabaseModule {}
