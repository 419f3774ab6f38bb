import { Injectable, Logger } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { MetricsService } from '../metrics/metrics.service';
import { ClockSkewEstimator, skewBounds } from './clock-skew';

/**
 * Our clock against Pozy's, measured on every answer (its `Date` header). The skip rule compares our read times
 * with Pozy's event timestamps; when our clock runs ahead, its margin (RECONCILE_CLOCK_SKEW_MS) must grow by as much.
 */
@Injectable()
export class PozyClock {
  private readonly logger = new Logger(PozyClock.name);
  private readonly estimator = new ClockSkewEstimator();
  private warned = false;

  constructor(
    private readonly config: AppConfig,
    metrics: MetricsService,
  ) {
    metrics.publishGauge(
      'pozy_sync_pozy_clock_skew_seconds',
      "How far this process's clock runs ahead of Pozy's (negative: behind), from the Date header of Pozy's answers",
      [],
      async (gauge) => {
        const estimate = this.estimator.estimate();
        if (estimate) gauge.set(estimate.aheadMs / 1000);
      },
    );
  }

  /** One answer: sent and received by our clock, stamped by Pozy's. */
  observe(sentAt: Date, receivedAt: Date, dateHeader: string | string[] | undefined): void {
    const bounds = skewBounds(sentAt.getTime(), receivedAt.getTime(), Array.isArray(dateHeader) ? dateHeader[0] : dateHeader);
    if (!bounds) return;
    this.estimator.add(bounds);
    const estimate = this.estimator.estimate();
    if (!estimate) return;
    // Warn only on what the answers prove (the bounds), not on the header's one-second resolution.
    const half = this.config.reconcileClockSkewMs / 2;
    const beyond = estimate.low > half || estimate.high < -half;
    if (beyond && !this.warned) {
      this.logger.warn(
        `Our clock runs ${Math.round(estimate.aheadMs)} ms ahead of Pozy's (negative: behind), past half of RECONCILE_CLOCK_SKEW_MS ` +
          `(${this.config.reconcileClockSkewMs} ms): the skip rule widens its margin by the measured skew; check NTP`,
      );
    }
    this.warned = beyond;
  }

  /**
   * How far our clock is proven to run ahead of Pozy's (ms, 0 when it runs behind or nothing was measured yet): the
   * lower bound, so that a clock in step never widens the margin. What the header's one-second resolution cannot
   * show stays RECONCILE_CLOCK_SKEW_MS's to cover.
   */
  aheadAtLeastMs(): number {
    return Math.max(0, this.estimator.estimate()?.low ?? 0);
  }
}
