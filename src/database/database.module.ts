import { Global, Module } from '@nestjs/common';
import { MetricsModule } from '../metrics/metrics.module';
import { BACKGROUND_MIGRATIONS } from './background-migrations/background-migration';
import { BackgroundMigrations } from './background-migrations/background-migrations.service';
import { DataMigrationRepository } from './background-migrations/data-migration.repository';
import { RELEASE_BACKGROUND_MIGRATIONS } from './background-migrations/registry';
import { ConnectionMonitor } from './connection-monitor';
import { DatabaseService } from './database.service';
import { PrimaryWatch } from './primary-watch';
import { TableStatistics } from './table-statistics';

@Global()
// The primary watch and the pools count what they discard (MetricsService), wherever the module is used alone.
@Module({
  imports: [MetricsModule],
  providers: [
    ConnectionMonitor,
    DatabaseService,
    PrimaryWatch,
    TableStatistics,
    DataMigrationRepository,
    BackgroundMigrations,
    { provide: BACKGROUND_MIGRATIONS, useValue: RELEASE_BACKGROUND_MIGRATIONS },
  ],
  exports: [ConnectionMonitor, DatabaseService, PrimaryWatch, TableStatistics, BackgroundMigrations, DataMigrationRepository],
})
export class DatabaseModule {}
