import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { LockKey } from '../database/advisory-lock';
import { OpsEventRepository } from '../notifications/ops-event.repository';
import { OpsEvents } from '../notifications/ops-events.service';
import { LockedSchedule } from '../schedule/locked-schedule';
import { StatusSnapshots } from './status-snapshot.service';

/** A breach is left once the oldest owed read is back under half the bound: a lag hovering at it tells nothing. */
const RECOVERY_SHARE = 0.5;
const MAX_CHECK_EVERY_MS = 5_000;

/**
 * Watches the freshness objective (FRESHNESS_OBJECTIVE_MS) from the status figures and tells of entering a breach and
 * of leaving it (ops.objective.breached, ops.objective.recovered), once each: one worker looks at a time, and the
 * open breach is the one ops_event holds, whichever replica entered it.
 */
@Injectable()
export class ObjectiveWatch implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(ObjectiveWatch.name);
  private timer: NodeJS.Timeout | undefined;
  private checking: Promise<void> | undefined;

  constructor(
    private readonly config: AppConfig,
    private readonly snapshots: StatusSnapshots,
    private readonly jobs: LockedSchedule,
    private readonly ops: OpsEvents,
    private readonly events: OpsEventRepository,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.config.runsWorker) return;
    this.timer = setInterval(
      () => {
        this.checking ??= this.check().finally(() => (this.checking = undefined));
      },
      Math.min(MAX_CHECK_EVERY_MS, this.config.freshnessObjectiveMs),
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
      const bound = this.config.freshnessObjectiveMs;
      const lagMs = (await this.snapshots.current()).figures.backlog.oldestPendingReadMs ?? 0;
      const open = await this.events.openBreach('freshness');
      if (!open && lagMs > bound) {
        const at = new Date().toISOString();
        this.logger.warn(`The mirror is behind its freshness objective: a read owed for ${lagMs} ms (over FRESHNESS_OBJECTIVE_MS = ${bound})`);
        await this.ops.emit({
          type: 'ops.objective.breached',
          key: `objective.breached:freshness:${at}`,
          workspaceId: null,
          data: { objective: 'freshness', boundMs: bound, lagMs },
        });
      } else if (open && lagMs <= bound * RECOVERY_SHARE) {
        this.logger.log(`The mirror is back within its freshness objective (behind since ${open.at.toISOString()})`);
        await this.ops.emit({
          type: 'ops.objective.recovered',
          key: `objective.recovered:${open.key}`,
          workspaceId: null,
          data: { objective: 'freshness', boundMs: bound, lagMs, breachedAt: open.at.toISOString() },
        });
      }
    } catch (error) {
      this.logger.warn(`Looking at the objectives failed: ${(error as Error).message}`);
    } finally {
      await lock.release();
    }
  }
}
