import { Global, Module } from '@nestjs/common';
import { MetricsModule } from '../metrics/metrics.module';
import { ConnectionMonitor } from './connection-monitor';
import { DatabaseService } from './database.service';
import { PrimaryWatch } from './primary-watch';
import { TableStatistics } from './table-statistics';

@Global()
// The primary watch and the pools count what they discard (MetricsService), wherever the module is used alone.
@Module({
  imports: [MetricsModule],
  providers: [ConnectionMonitor, DatabaseService, PrimaryWatch, TableStatistics],
  exports: [ConnectionMonitor, DatabaseService, PrimaryWatch, TableStatistics],
})
export class DatabaseModule {}
