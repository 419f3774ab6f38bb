import { Global, Module } from '@nestjs/common';
import { MetricsController } from './metrics.controller';
import { MetricsService } from './metrics.service';
import { ProcessFaults } from './process-faults';

/** Prometheus metrics: the one MetricsService every capability counts and publishes into, and GET /metrics. */
@Global()
@Module({
  controllers: [MetricsController],
  providers: [MetricsService, ProcessFaults],
  exports: [MetricsService, ProcessFaults],
})
export class MetricsModule {}
