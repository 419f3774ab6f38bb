import { Injectable } from '@nestjs/common';
import { MetricsService } from '../metrics/metrics.service';
import { AckSpool } from '../receive/ack-spool';
import { StatusSnapshots } from './status-snapshot.service';
import { EXACT_COUNT_LIMIT } from './sync-figures.repository';

const ESTIMATED_PAST = `; exact up to ${EXACT_COUNT_LIMIT}, PostgreSQL's estimate beyond`;

/**
 * The database's gauges on /metrics: the figures GET /sync/status and the status page show, from the same snapshot
 * (StatusSnapshots), so a scrape costs no read of its own. They describe the whole deployment (every replica reads the
 * same database), beside the dead events of this replica's spool, which the status shows as `deadLetters.ack`.
 */
@Injectable()
export class StatusMetrics {
  constructor(metrics: MetricsService, snapshots: StatusSnapshots, spool: AckSpool) {
    metrics.publishGauges(
      {
        mirrorLag: {
          name: 'pozy_sync_mirror_lag_seconds',
          help: 'Age of the oldest reconcile read still owed, waiting or failing in retries (0 when none): how far behind Pozy the mirror may be',
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
        importProgress: {
          name: 'pozy_sync_import_progress_ratio',
          help: "How much of the import's listing of posts is done (posts listed of Pozy's total): 1 once it has succeeded, or when none is needed",
        },
        unplacedChanges: {
          name: 'pozy_sync_change_feed_unplaced_seconds',
          help: 'Age of the oldest committed change-feed entry still without a position (0 when none): readers of GET /changes see nothing past it',
        },
        budgetPaused: {
          name: 'pozy_sync_pozy_budget_paused_seconds',
          help: "How much longer a 429 keeps the environment's API key paused on every replica (0 when not paused)",
        },
        importFailed: {
          name: 'pozy_sync_import_failed',
          help: "Deprecated: pozy_sync_workspaces_import_failed counts every workspace. 1 while the environment's workspace's import has failed and no run has listed the workspace since, else 0",
        },
        failedImports: {
          name: 'pozy_sync_workspaces_import_failed',
          help: "Active workspaces (the environment's and those added through the API) whose import has failed and that no run has listed since; paused and removed ones are not counted",
        },
        budget: {
          name: 'pozy_sync_pozy_budget_requests',
          help: "The Pozy budget per window of the environment's API key (POZY_API_KEY): limit (POZY_RATE_LIMIT_PER_MINUTE), effective (less others' use and their reserve), used (by every replica, in the window just ended), others (another client of the key, from Pozy's headers)",
          labelNames: ['figure'],
        },
      },
      async (gauges) => {
        const { figures, runs, failedImports, pozyBudget } = await snapshots.current();
        const { backlog } = figures;
        gauges.mirrorLag.set((backlog.oldestPendingReadMs ?? 0) / 1000);
        gauges.pendingReads.set(backlog.pendingReads.value);
        gauges.deadLetters.set({ queue: 'delivery', kind: 'reconcile' }, backlog.deadLetters.reconcile.value);
        gauges.deadLetters.set({ queue: 'delivery', kind: 'notification' }, backlog.deadLetters.notification.value);
        gauges.deadLetters.set({ queue: 'ack', kind: 'event' }, spool.counts().dead);
        gauges.notificationsPending.set(backlog.pendingNotifications.value);
        gauges.notificationLag.set((backlog.oldestPendingNotificationMs ?? 0) / 1000);
        gauges.pausedSubscriptions.set(backlog.pausedSubscriptions);
        gauges.unplacedChanges.set(Math.max(0, backlog.oldestUnplacedChangeMs ?? 0) / 1000);

        const { status, run } = runs.import;
        const posts = run?.progress.posts;
        if (status === 'running') gauges.importProgress.set(posts?.total ? Math.min(1, posts.done / posts.total) : 0);
        else gauges.importProgress.set(status === 'pending' || status === 'failed' ? 0 : 1);
        gauges.importFailed.set(status === 'failed' ? 1 : 0);
        gauges.failedImports.set(failedImports);

        gauges.budget.set({ figure: 'limit' }, pozyBudget.limit);
        gauges.budget.set({ figure: 'effective' }, pozyBudget.effectiveLimit);
        gauges.budget.set({ figure: 'used' }, pozyBudget.usedInWindow);
        gauges.budget.set({ figure: 'others' }, pozyBudget.pozy?.othersUsing ?? 0);
        gauges.budgetPaused.set(Math.max(0, ((pozyBudget.pausedUntil?.getTime() ?? 0) - Date.now()) / 1000));
      },
    );
  }
}
