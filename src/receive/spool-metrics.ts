import { Injectable } from '@nestjs/common';
import { MetricsService } from '../metrics/metrics.service';
import { AckSpool } from './ack-spool';

/**
 * This replica's spool on /metrics, from the figures GET /sync/status shows as `spool` (its dead events are
 * in health/status-metrics.ts's dead-letter gauge, beside the delivery queue's).
 */
@Injectable()
export class SpoolMetrics {
  constructor(metrics: MetricsService, spool: AckSpool) {
    metrics.publishGauge('pozy_sync_spool_events', "Events in this replica's acknowledgment spool waiting for the database", [], async (gauge) => {
      gauge.set(spool.counts().pending);
    });
    metrics.publishGauge(
      'pozy_sync_spool_oldest_age_seconds',
      "Age of the oldest event in this replica's acknowledgment spool still waiting for the database (0 when none waits)",
      [],
      async (gauge) => {
        const oldest = spool.oldestPendingAt();
        gauge.set(oldest === null ? 0 : (Date.now() - oldest.getTime()) / 1000);
      },
    );
  }
}
