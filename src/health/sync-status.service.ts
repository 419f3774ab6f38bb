import { Injectable } from '@nestjs/common';
import type { ReadDetail } from '../common/read-access';
import type { DataMigrationProgress } from '../database/background-migrations/data-migration.repository';
import { ConnectionMonitor } from '../database/connection-monitor';
import { DISCARD_CAUSES, type DiscardCause } from '../database/failover-pool';
import { PrimaryState, PrimaryWatch } from '../database/primary-watch';
import type { ListedDeadLetter } from '../dead-letters/dead-letter.repository';
import type { Subscription } from '../notifications/subscription.repository';
import type { BudgetStatus } from '../pozy/budget/pozy-budget.service';
import { SweepRunResponse } from '../runs/dto/sweep-run.response';
import type { ImportState } from '../runs/import-and-sweep.service';
import { AckSpool } from '../receive/ack-spool';
import { WorkspaceRegistry } from '../workspaces/workspace-registry.service';
import { StatusSnapshot, StatusSnapshots } from './status-snapshot.service';
import { Estimate, MinuteCount } from './sync-figures.repository';

export interface SyncStatus {
  queue: { pendingReads: number; oldestPendingAgeMs: number | null; jobs: number; failingJobs: number };
  events: { received: number; lastHour: number; lastReceivedAt: Date | null };
  mirror: { posts: number; deletedPosts: number; accounts: number; removedAccounts: number; lastSyncedAt: Date | null };
  /** Dead letters not replayed yet, by queue. */
  deadLetters: { delivery: number; ack: number };
  /** Events this replica's local spool holds, waiting for the database, and how long the oldest has waited. */
  spool: { pending: number; oldestPendingAgeMs: number | null };
  /**
   * This replica's view of the database's primary (database/primary-watch.ts): whether one takes writes now, the
   * failovers and restarts it has seen, the time it spent without one, and the connections its pools discarded.
   * Server addresses and the reason's text are null in a public answer.
   */
  database: {
    state: PrimaryState;
    reason: string | null;
    since: Date;
    primary: string | null;
    lastChange: { kind: string; at: Date; from: string | null; to: string | null; withoutPrimaryMs: number } | null;
    changes: { failover: number; restart: number; reconnect: number };
    withoutPrimarySeconds: number;
    connectionsDiscarded: Record<DiscardCause, number>;
  };
  /**
   * The release's background data migrations (a change to every row, in batches, after an upgrade): each one started,
   * with its progress; `lastError` null in a public answer.
   */
  backgroundMigrations: Array<Omit<DataMigrationProgress, 'cursor'>>;
  backfill: {
    lastRun: { id: string; status: string; startedAt: Date; finishedAt: Date | null; eventsRecovered: number; error: string | null } | null;
    /** Events Pozy logged that never reached us (found by the backfill), by the hour they happened: the last 48 h. */
    gaps: Array<{ hour: Date; events: number }>;
  };
  /** Change notifications: waiting to be sent, and each subscriber's health (paused ones are the circuit breaker's). */
  notifications: {
    pending: number;
    oldestPendingAgeMs: number | null;
    /** Subscriptions the circuit breaker paused. */
    pausedSubscriptions: number;
    /**
     * `origin` only (scheme, host, port): a URL's path or query may hold a subscriber's token. Id and origin are
     * null in a public answer.
     */
    subscribers: Array<Pick<Subscription, 'active' | 'health'> & { id: string | null; origin: string | null }>;
  };
  /** The import of the workspace (the first listing, on the first start), as `GET /admin/sweep/:runId` shows it. */
  import: { status: ImportState } & (({ runId: string } & Omit<SweepRunResponse, 'id'>) | { runId: null });
  sweep: { lastRun: SweepRunResponse | null };
  /** The deployment's one Pozy budget. */
  pozyBudget: BudgetStatus;
  /**
   * Every workspace in bounded size, whatever their number: counts by state, and the few whose managed webhook Pozy
   * reports failing or whose last check failed (ids withheld in a public answer). `GET /admin/workspaces/:id` has
   * one workspace's detail.
   */
  workspaces: {
    total: number;
    byState: Record<string, number>;
    webhooksFailing: number;
    failing: (string | null)[];
    /** The few whose oldest waiting read is oldest, with its age. */
    furthestBehind: { id: string | null; oldestPendingAgeMs: number }[];
  };
  /** The figures above that are PostgreSQL's estimates, by path (e.g. `mirror.posts`); all others are exact. */
  estimated: string[];
  /** A public answer (no token, STATUS_PUBLIC=true): resource ids and error texts are withheld (null). */
  redacted: boolean;
}

/** The status and what only the status page shows, read together (one snapshot: StatusSnapshots). */
export interface SyncSnapshot {
  status: SyncStatus;
  eventsPerMinute: Estimate<MinuteCount[]>;
  /** The newest dead letters of the delivery queue, unredacted: the page redacts them itself. */
  deadLetters: ListedDeadLetter[];
}

/** Failing workspaces named in the status: the rest are counted. */
const MAX_LISTED_FAILING = 5;

const ms = (value: number | null) => (value === null ? null : Math.round(value));

/** A run's texts say what Pozy or the database answered, which may quote the data. */
const withoutErrors = <T extends { lastError: string | null; error: string | null }>(run: T): T => ({ ...run, lastError: null, error: null });

/**
 * The status as anyone may see it (STATUS_PUBLIC=true, no token): counts, states and times, but no resource ids
 * (subscriptions' ids and origins) and no error texts, which quote Pozy's or a subscriber's answers. Run ids stay:
 * they are the service's own, name no data, and only the admin token opens them.
 */
export function publicStatus(status: SyncStatus): SyncStatus {
  const lastRun = status.backfill.lastRun;
  return {
    ...status,
    backfill: { ...status.backfill, lastRun: lastRun && { ...lastRun, error: null } },
    notifications: {
      ...status.notifications,
      subscribers: status.notifications.subscribers.map((s) => ({
        ...s,
        id: null,
        origin: null,
        health: { ...s.health, lastError: null, pausedReason: null },
      })),
    },
    import: status.import.runId === null ? status.import : withoutErrors(status.import),
    sweep: { lastRun: status.sweep.lastRun && withoutErrors(status.sweep.lastRun) },
    workspaces: {
      ...status.workspaces,
      failing: status.workspaces.failing.map(() => null),
      furthestBehind: status.workspaces.furthestBehind.map((w) => ({ ...w, id: null })),
    },
    backgroundMigrations: status.backgroundMigrations.map((m) => ({ ...m, lastError: null })),
    database: {
      ...status.database,
      reason: null,
      primary: null,
      lastChange: status.database.lastChange && { ...status.database.lastChange, from: null, to: null },
    },
    redacted: true,
  };
}

/** How far behind the mirror is, from the database alone: GET /sync/status and the status page share it. */
@Injectable()
export class SyncStatusService {
  constructor(
    private readonly snapshots: StatusSnapshots,
    private readonly spool: AckSpool,
    private readonly registry: WorkspaceRegistry,
    private readonly watch: PrimaryWatch,
    private readonly connections: ConnectionMonitor,
  ) {}

  /** From this process alone (no statement), so it reads the same while the database is away. */
  private database(): SyncStatus['database'] {
    const { state, reason, since, primary, lastChange, changes, withoutPrimarySeconds } = this.watch.figures();
    const connectionsDiscarded = Object.fromEntries(DISCARD_CAUSES.map((cause) => [cause, 0])) as Record<DiscardCause, number>;
    for (const { cause, count } of this.connections.discards()) connectionsDiscarded[cause] += count;
    return {
      state,
      reason,
      since,
      primary: primary?.address ?? null,
      lastChange: lastChange && {
        kind: lastChange.kind,
        at: lastChange.at,
        from: lastChange.from?.address ?? null,
        to: lastChange.to.address,
        withoutPrimaryMs: Math.round(lastChange.withoutPrimaryMs),
      },
      changes,
      withoutPrimarySeconds: Math.round(withoutPrimarySeconds * 1000) / 1000,
      connectionsDiscarded,
    };
  }

  /** Counts from this replica's copy of the registry (no statement), and the snapshot's few furthest behind: the same size at one workspace and at thousands. */
  private workspaces(behind: StatusSnapshot['furthestBehind']): SyncStatus['workspaces'] {
    const byState: Record<string, number> = { active: 0, paused: 0, removing: 0, detached: 0 };
    const failing: string[] = [];
    let total = 0;
    for (const workspace of this.registry.all()) {
      total += 1;
      byState[workspace.state] = (byState[workspace.state] ?? 0) + 1;
      const health = workspace.stored?.webhookHealth;
      if (workspace.state === 'active' && health && (health.error || (health.failureCount ?? 0) > 0 || health.isActive === false))
        failing.push(workspace.id);
    }
    const now = Date.now();
    return {
      total,
      byState,
      webhooksFailing: failing.length,
      failing: failing.slice(0, MAX_LISTED_FAILING),
      furthestBehind: behind.map((w) => ({ id: w.workspaceId, oldestPendingAgeMs: Math.max(0, now - w.waitingSince.getTime()) })),
    };
  }

  async status(detail: ReadDetail): Promise<SyncStatus> {
    return (await this.snapshot(detail)).status;
  }

  async snapshot(detail: ReadDetail): Promise<SyncSnapshot> {
    const snapshot = await this.snapshots.current();
    const { backlog, tables, recent, lastSyncedAt, gaps } = snapshot.figures;
    const { lastBackfillRun: lastRun, subscribers, runs, pozyBudget } = snapshot;
    const spool = this.spool.counts();
    const oldestSpooled = this.spool.oldestPendingAt();
    // Reads a figure into the answer, listing it under `estimated` when it is one.
    const estimated: string[] = [];
    const read = <T>(path: string, figure: Estimate<T>): T => {
      if (figure.estimated) estimated.push(path);
      return figure.value;
    };
    const status: SyncStatus = {
      queue: {
        pendingReads: read('queue.pendingReads', backlog.pendingReads),
        oldestPendingAgeMs: ms(backlog.oldestPendingReadMs),
        jobs: read('queue.jobs', tables.jobs),
        failingJobs: read('queue.failingJobs', tables.failingJobs),
      },
      events: {
        received: read('events.received', tables.storedEvents),
        lastHour: read('events.lastHour', recent.lastHour),
        lastReceivedAt: read('events.lastReceivedAt', recent.lastReceivedAt),
      },
      mirror: {
        posts: read('mirror.posts', tables.posts),
        deletedPosts: read('mirror.deletedPosts', tables.deletedPosts),
        accounts: read('mirror.accounts', tables.accounts),
        removedAccounts: read('mirror.removedAccounts', tables.removedAccounts),
        lastSyncedAt,
      },
      deadLetters: {
        delivery: read('deadLetters.delivery', {
          value: backlog.deadLetters.reconcile.value + backlog.deadLetters.notification.value,
          estimated: backlog.deadLetters.reconcile.estimated || backlog.deadLetters.notification.estimated,
        }),
        ack: spool.dead,
      },
      spool: { pending: spool.pending, oldestPendingAgeMs: oldestSpooled && Math.max(0, Date.now() - oldestSpooled.getTime()) },
      database: this.database(),
      backgroundMigrations: snapshot.backgroundMigrations.map(({ cursor: _cursor, ...progress }) => progress),
      backfill: {
        lastRun: lastRun
          ? {
              id: lastRun.id,
              status: lastRun.status,
              startedAt: lastRun.startedAt,
              finishedAt: lastRun.finishedAt,
              eventsRecovered: lastRun.eventsRecovered,
              error: lastRun.error,
            }
          : null,
        gaps,
      },
      notifications: {
        pending: read('notifications.pending', backlog.pendingNotifications),
        oldestPendingAgeMs: ms(backlog.oldestPendingNotificationMs),
        pausedSubscriptions: backlog.pausedSubscriptions,
        subscribers: subscribers.map(({ id, url, active, health }) => ({ id, origin: new URL(url).origin, active, health })),
      },
      import: runs.import.run
        ? (({ id, ...rest }) => ({ ...rest, runId: id, status: runs.import.status }))(runs.import.run)
        : { status: runs.import.status, runId: null },
      sweep: { lastRun: runs.lastSweep },
      pozyBudget,
      workspaces: this.workspaces(snapshot.furthestBehind),
      estimated,
      redacted: false,
    };
    return { status: detail === 'full' ? status : publicStatus(status), eventsPerMinute: recent.perMinute, deadLetters: snapshot.deadLetters };
  }
}
