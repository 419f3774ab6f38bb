import { Module } from '@nestjs/common';
import { HealthModule } from '../health/health.module';
import { ReceiveModule } from '../receive/receive.module';
import { StatusPageController } from './status-page.controller';
import { StatusPageService } from './status-page.service';

/** GET /: the server-rendered status page (MetricsService and DatabaseService come from global modules). */
@Module({
  imports: [HealthModule, ReceiveModule],
  controllers: [StatusPageController],
  providers: [StatusPageService],
})
export class StatusPageModule {}
