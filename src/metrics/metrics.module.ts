import { Global, Module } from '@nestjs/common';
import { SyncFiguresModule } from '../health/sync-figures.module';
import { WebhooksModule } from '../webhooks/webhooks.module';
import { MetricsController } from './metrics.controller';
import { MetricsService } from './metrics.service';

/** Prometheus metrics: the one MetricsService every capability counts into, and GET /metrics. */
@Global()
@Module({
  imports: [WebhooksModule, SyncFiguresModule],
  controllers: [MetricsController],
  providers: [MetricsService],
  exports: [MetricsService],
})
export class MetricsModule {}
