import { Injectable } from '@nestjs/common';
import { MetricsService } from '../metrics/metrics.service';
import { AckSpool } from '../webhooks/ack-spool';
import { EXACT_COUNT_LIMIT, SyncFiguresRepository } from './sync-figures.repository';

const ESTIMATED_PAST = `; exact up to ${EXACT_COUNT_LIMIT}, PostgreSQL's estimate beyond`;

/**
 * The backlog's gauges on /metrics: SyncFiguresRepository.backlog(), the figures GET /sync/status and the status page
 * show, read once per scrape. They describe the whole deployment (every replica reads the same database), beside the
 * dead events of this replica's spool, which the status shows as `deadLetters.ack`.
 */
@Injectable()
export class StatusMetrics {
  constructor(metrics: MetricsService, figures: SyncFiguresRepository, spool: AckSpool) {
    metrics.publishGauges(
      {
        mirrorLag: {
          name: 'pozy_sync_mirror_lag_seconds',
          help: 'Age of the oldest pending reconcile read (0 when none): how far behind Pozy the mirror may be',
        },
        pendingReads: { name: 'pozy_sync_reconcile_pending', help: `Resources waiting for a read from Pozy${ESTIMATED_PAST}` },
        deadLetters: {
          name: 'pozy_sync_dead_letters',
          help: `Dead letters neither replayed nor resolved, by queue and kind (ack: this replica's spool)${ESTIMATED_PAST}`,
          labelNames: ['queue', 'kind'],
        },
        notificationsPending: { name: 'pozy_sync_notifications_pending', help: `Change notifications waiting to be delivered${ESTIMATED_PAST}` },
        notificationLag: { name: 'pozy_sync_notification_lag_seconds', help: 'Age of the oldest pending change notification (0 when none)' },
        pausedSubscriptions: { name: 'pozy_sync_subscriptions_paused', help: 'Subscriptions paused by the circuit breaker' },
      },
      async (gauges) => {
        const backlog = await figures.backlog();
        gauges.mirrorLag.set((backlog.oldestPendingReadMs ?? 0) / 1000);
        gauges.pendingReads.set(backlog.pendingReads.value);
        gauges.deadLetters.set({ queue: 'delivery', kind: 'reconcile' }, backlog.deadLetters.reconcile.value);
        gauges.deadLetters.set({ queue: 'delivery', kind: 'notification' }, backlog.deadLetters.notification.value);
        gauges.deadLetters.set({ queue: 'ack', kind: 'event' }, spool.counts().dead);
        gauges.notificationsPending.set(backlog.pendingNotifications.value);
        gauges.notificationLag.set((backlog.oldestPendingNotificationMs ?? 0) / 1000);
        gauges.pausedSubscriptions.set(backlog.pausedSubscriptions);
      },
    );
  }
}
