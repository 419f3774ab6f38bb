import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { LockKey } from '../database/advisory-lock';
import { OpsEventRepository } from '../notifications/ops-event.repository';
import { OpsEvents } from '../notifications/ops-events.service';
import { LockedSchedule } from '../schedule/locked-schedule';
import { StatusSnapshots } from './status-snapshot.service';
import { SyncFiguresRepository } from './sync-figures.repository';

/** A breach is left once the lag is back under half the bound: a lag hovering at it tells nothing. */
const RECOVERY_SHARE = 0.5;
const MAX_CHECK_EVERY_MS = 5_000;

/** The objectives watched, as `data.objective` names them (docs/operations.md, "Objectives and alerts"). */
export type ObjectiveName = 'freshness' | 'notification';

/** What one look finds of an objective: its lag now, and what a breach adds to its `data`. */
interface Lag {
  lagMs: number;
  detail: Record<string, unknown>;
  /** The lag in words, for the log line of a breach. */
  says: string;
}

interface Objective {
  name: ObjectiveName;
  boundMs: number;
  /** The variable that sets the bound, for the log. */
  variable: string;
  /** What falls behind, for the log: "The mirror is", "Change notifications are". */
  subject: string;
  lag(): Promise<Lag>;
}

/**
 * Watches the objectives and tells of entering a breach and of leaving it (ops.objective.breached,
 * ops.objective.recovered, `data.objective` naming which), once each: one worker looks at a time, and each
 * objective's open breach is the one ops_event holds, whichever replica entered it.
 * - `freshness` (FRESHNESS_OBJECTIVE_MS): the oldest read owed to the mirror, from the status figures.
 * - `notification` (NOTIFICATION_OBJECTIVE_MS): the oldest change notification owed to a healthy subscriber at its
 *   first attempt, since its write (SyncFiguresRepository.oldestOwedToHealthy).
 */
@Injectable()
export class ObjectiveWatch implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(ObjectiveWatch.name);
  private readonly objectives: readonly Objective[];
  private timer: NodeJS.Timeout | undefined;
  private checking: Promise<void> | undefined;

  constructor(
    private readonly config: AppConfig,
    snapshots: StatusSnapshots,
    figures: SyncFiguresRepository,
    private readonly jobs: LockedSchedule,
    private readonly ops: OpsEvents,
    private readonly events: OpsEventRepository,
  ) {
    this.objectives = [
      {
        name: 'freshness',
        boundMs: config.freshnessObjectiveMs,
        variable: 'FRESHNESS_OBJECTIVE_MS',
        subject: 'The mirror is',
        lag: async () => {
          const lagMs = (await snapshots.current()).figures.backlog.oldestPendingReadMs ?? 0;
          return { lagMs, detail: {}, says: `a read owed for ${lagMs} ms` };
        },
      },
      {
        name: 'notification',
        boundMs: config.notificationObjectiveMs,
        variable: 'NOTIFICATION_OBJECTIVE_MS',
        subject: 'Change notifications are',
        lag: async () => {
          const owed = await figures.oldestOwedToHealthy();
          if (!owed) return { lagMs: 0, detail: {}, says: 'none owed' };
          const lagMs = Math.round(owed.ms);
          return {
            lagMs,
            detail: { subscriptionId: owed.subscriptionId },
            says: `a notification owed to subscription ${owed.subscriptionId} for ${lagMs} ms since its write`,
          };
        },
      },
    ];
  }

  onApplicationBootstrap(): void {
    if (!this.config.runsWorker) return;
    this.timer = setInterval(
      () => {
        this.checking ??= this.check().finally(() => (this.checking = undefined));
      },
      Math.min(MAX_CHECK_EVERY_MS, ...this.objectives.map((objective) => objective.boundMs)),
    );
    this.timer.unref();
  }

  async beforeApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.checking;
  }

  private async check(): Promise<void> {
    const lock = await this.jobs.tryLock(LockKey.ObjectiveWatch).catch(() => null);
    if (!lock) return;
    try {
      // Each on its own: one whose figures cannot be read does not keep the other from being looked at.
      for (const objective of this.objectives) {
        await this.look(objective).catch((error: unknown) =>
          this.logger.warn(`Looking at the ${objective.name} objective failed: ${(error as Error).message}`),
        );
      }
    } finally {
      await lock.release();
    }
  }

  private async look(objective: Objective): Promise<void> {
    const { name, boundMs } = objective;
    const { lagMs, detail, says } = await objective.lag();
    const open = await this.events.openBreach(name);
    if (!open && lagMs > boundMs) {
      const at = new Date().toISOString();
      this.logger.warn(`${objective.subject} behind the ${name} objective: ${says} (over ${objective.variable} = ${boundMs})`);
      await this.ops.emit({
        type: 'ops.objective.breached',
        key: `objective.breached:${name}:${at}`,
        workspaceId: null,
        data: { objective: name, boundMs, lagMs, ...detail },
      });
    } else if (open && lagMs <= boundMs * RECOVERY_SHARE) {
      this.logger.log(`${objective.subject} back within the ${name} objective (behind since ${open.at.toISOString()})`);
      await this.ops.emit({
        type: 'ops.objective.recovered',
        key: `objective.recovered:${open.key}`,
        workspaceId: null,
        data: { objective: name, boundMs, lagMs, breachedAt: open.at.toISOString() },
      });
    }
  }
}
