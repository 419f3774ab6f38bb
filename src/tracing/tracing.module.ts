import { Global, Module } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { Tracing } from './tracing.service';

/** OpenTelemetry traces (OTEL_EXPORTER_OTLP_ENDPOINT): the one Tracing every capability opens its spans with. */
@Global()
@Module({
  providers: [{ provide: Tracing, useFactory: (config: AppConfig) => Tracing.start(config), inject: [AppConfig] }],
  exports: [Tracing],
})
export class TracingModule {}
