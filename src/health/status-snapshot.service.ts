import { Injectable } from '@nestjs/common';
import { BackfillRun, BackfillRunRepository } from '../backfill/backfill-run.repository';
import { ApiError } from '../common/api-error';
import type { ErrorCodesAnswered } from '../common/error-body.dto';
import { SharedComputation } from '../common/shared-computation';
import { AppConfig } from '../config/app-config';
import { DeadLetterRepository, ListedDeadLetter } from '../dead-letters/dead-letter.repository';
import { SubscriberHealth, SubscriptionRepository } from '../notifications/subscription.repository';
import { BudgetStatus, PozyBudget } from '../pozy/budget/pozy-budget.service';
import { RunsStatus, SweepService } from '../runs/import-and-sweep.service';
import { isNoConnection, isStatementTimeout } from '../common/database-errors';
import { TOKENS_UNAVAILABLE } from '../common/read-access';
import { DataMigrationProgress, DataMigrationRepository } from '../database/background-migrations/data-migration.repository';
import { AckTimeoutError, withDeadline } from '../receive/ack-deadline';
import { STATUS_STATEMENT_TIMEOUT_MS, StatusFigures, SyncFiguresRepository } from './sync-figures.repository';
import { ReconcileRequestRepository } from '../reconcile/reconcile-request.repository';

/** A failed reading is shared with every caller for STATUS_CACHE_MS; the next one is worth trying after this. */
const RETRY_AFTER_S = 2;
/**
 * A caller waits at most this for the reading in flight, whatever becomes of it: a database that stopped answering
 * (no statement timeout can fire then) must not hold every caller. The reading itself goes on alone, and no second
 * one starts before it ends.
 */
const READING_DEADLINE_MS = 5_000;

/** The 503s of the three endpoints that show the figures, for their OpenAPI description. */
export const STATUS_UNAVAILABLE: ErrorCodesAnswered = {
  status_timeout: `a statement reading the figures ran past ${STATUS_STATEMENT_TIMEOUT_MS} ms (the database is busy, or a table locked); with \`Retry-After\``,
  overloaded: 'no database connection came free in time; with `Retry-After`',
  ...TOKENS_UNAVAILABLE,
};

/** Workspaces the status names as furthest behind. */
const FURTHEST_BEHIND = 5;

/** Dead letters the status page shows, newest first, of both queues together (the delivery queue's are read here). */
export const PAGE_DEAD_LETTERS = 20;

/** Everything GET /sync/status, the status page and /metrics read from the database, read together. */
export interface StatusSnapshot {
  figures: StatusFigures;
  lastBackfillRun: BackfillRun | undefined;
  subscribers: SubscriberHealth[];
  /** The import and last sweep of `default`. */
  runs: RunsStatus;
  /** Active workspaces (of every one) whose import has failed and that no run has listed since. */
  failedImports: number;
  /** The newest PAGE_DEAD_LETTERS of the delivery queue, unredacted. */
  deadLetters: ListedDeadLetter[];
  /** The few workspaces whose oldest waiting read is oldest. */
  furthestBehind: { workspaceId: string; waitingSince: Date }[];
  pozyBudget: BudgetStatus;
  /** The release's background data migrations started so far. */
  backgroundMigrations: DataMigrationProgress[];
}

/**
 * The one reader of the status's figures for the whole process. However many callers ask (anonymous ones included:
 * STATUS_PUBLIC), the figures are read at most once at a time, on one connection of the pool, and each reading is
 * answered to every caller for STATUS_CACHE_MS: the connections the receiver's group commit and the worker need are
 * never the status's. Callers with a token and without one share the reading; redaction comes after (publicStatus).
 */
@Injectable()
export class StatusSnapshots {
  private readonly shared: SharedComputation<StatusSnapshot>;

  constructor(
    config: AppConfig,
    private readonly figures: SyncFiguresRepository,
    private readonly backfillRuns: BackfillRunRepository,
    private readonly subscriptions: SubscriptionRepository,
    private readonly sweeps: SweepService,
    private readonly deadLetters: DeadLetterRepository,
    private readonly budget: PozyBudget,
    private readonly requests: ReconcileRequestRepository,
    private readonly dataMigrations: DataMigrationRepository,
  ) {
    this.shared = new SharedComputation(() => this.read(), config.statusCacheMs);
  }

  /** The latest snapshot: `503 status_timeout` when a statement ran past STATUS_STATEMENT_TIMEOUT_MS, or no answer came in READING_DEADLINE_MS. */
  current(): Promise<StatusSnapshot> {
    return withDeadline(this.shared.get(), READING_DEADLINE_MS).catch((error: unknown) => {
      if (!(error instanceof AckTimeoutError)) throw error;
      throw new ApiError(
        'status_timeout',
        `Reading the status figures took longer than ${READING_DEADLINE_MS} ms (the database does not answer); retry shortly`,
        undefined,
        RETRY_AFTER_S,
      );
    });
  }

  private async read(): Promise<StatusSnapshot> {
    try {
      // One statement after another, on the snapshot's one connection.
      const read = await this.figures.snapshot(async (db) => ({
        figures: await this.figures.figuresOf(db),
        lastBackfillRun: await this.backfillRuns.latest(db),
        subscribers: await this.subscriptions.health(db),
        runs: await this.sweeps.status(db),
        failedImports: await this.sweeps.failedImports(db),
        deadLetters: await this.deadLetters.list(PAGE_DEAD_LETTERS, db),
        furthestBehind: await this.requests.furthestBehind(FURTHEST_BEHIND, db),
        backgroundMigrations: await this.dataMigrations.list(db),
      }));
      // Once the snapshot has given its connection back: the budget's owner creates its row when it is missing, which
      // a read-only snapshot cannot. One primary-key lookup.
      return { ...read, pozyBudget: await this.budget.status() };
    } catch (error) {
      if (isStatementTimeout(error)) {
        throw new ApiError(
          'status_timeout',
          `Reading the status figures took longer than ${STATUS_STATEMENT_TIMEOUT_MS} ms (the database is busy or a table is locked); retry shortly`,
          undefined,
          RETRY_AFTER_S,
        );
      }
      // Every connection busy (an import, a burst of webhooks): the figures wait, the receiver does not.
      if (isNoConnection(error)) {
        throw new ApiError(
          'overloaded',
          'Every database connection stayed busy; the status figures are read again shortly',
          undefined,
          RETRY_AFTER_S,
        );
      }
      throw error;
    }
  }
}
