import { Injectable } from '@nestjs/common';
import { MetricsService } from '../metrics/metrics.service';
import { ChangeRepository } from './change.repository';

/** The feed's sequencer on /metrics: an entry left unplaced for long means no replica's sequencer is placing them. */
@Injectable()
export class ChangeFeedMetrics {
  constructor(metrics: MetricsService, changes: ChangeRepository) {
    metrics.publishGauge(
      'pozy_sync_change_feed_unplaced_seconds',
      'Age of the oldest committed change-feed entry still without a position (0 when none): readers of GET /changes see nothing past it',
      [],
      async (gauge) => {
        gauge.set(await changes.oldestUnplacedSeconds());
      },
    );
  }
}
