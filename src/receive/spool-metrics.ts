import { Injectable } from '@nestjs/common';
import { MetricsService } from '../metrics/metrics.service';
import { AckSpool } from './ack-spool';

/**
 * This replica's spool on /metrics, from the counts GET /sync/status shows as `spool.pending` (its dead events are
 * in health/status-metrics.ts's dead-letter gauge, beside the delivery queue's).
 */
@Injectable()
export class SpoolMetrics {
  constructor(metrics: MetricsService, spool: AckSpool) {
    metrics.publishGauge('pozy_sync_spool_events', "Events in this replica's acknowledgment spool waiting for the database", [], async (gauge) => {
      gauge.set(spool.counts().pending);
    });
  }
}
