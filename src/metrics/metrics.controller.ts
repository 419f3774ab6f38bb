import { Controller, Get, Header } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiErrorResponse } from '../common/error-body.dto';
import { MetricsService } from './metrics.service';

@ApiTags('Metrics')
@Controller('metrics')
export class MetricsController {
  constructor(private readonly metrics: MetricsService) {}

  /** Prometheus text format: this process's counters, the deployment's database gauges, this replica's spool. */
  @Get()
  @Header('content-type', 'text/plain; version=0.0.4; charset=utf-8')
  @ApiOperation({ summary: 'Prometheus metrics: counters of this process, gauges of the deployment and of this replica.' })
  @ApiOkResponse({
    description: 'The Prometheus text exposition format (version 0.0.4).',
    content: {
      'text/plain': { schema: { type: 'string', example: '# TYPE pozy_sync_reconcile_pending gauge\npozy_sync_reconcile_pending 0\n' } },
    },
  })
  @ApiErrorResponse({ internal_error: 'the database did not answer' })
  @ApiErrorResponse({
    status_timeout: 'a statement reading the database gauges ran past its time limit (the database is busy, or a table locked)',
    overloaded: 'every database connection stayed busy. Both with `Retry-After`',
  })
  render(): Promise<string> {
    return this.metrics.render();
  }
}
