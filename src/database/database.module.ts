import { Global, Module } from '@nestjs/common';
import { DatabaseService } from './database.service';
import { TableStatistics } from './table-statistics';

@Global()
@Module({ providers: [DatabaseService, TableStatistics], exports: [DatabaseService, TableStatistics] })
export class DatabaseModule {}
