import { Injectable, Logger } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { CronJob } from 'cron';
import { AppConfig } from '../config/app-config';
import { HeldLock, LockKey, tryAdvisoryLock } from '../database/advisory-lock';
import { DatabaseService } from '../database/database.service';

/** A cron job registered by LockedSchedule.schedule(). */
export interface ScheduledJob {
  /** No tick starts after this; one under way goes on (its owner waits for the work it started). */
  stop(): void;
}

/**
 * Jobs that run on one replica at a time, each under its advisory lock (database/advisory-lock.ts): on a schedule,
 * every worker replica ticks, the one that takes the lock runs and the others skip that tick; and on request
 * (POST /admin/...), through tryLock(), refused while any replica holds the lock.
 */
@Injectable()
export class LockedSchedule {
  private readonly logger = new Logger(LockedSchedule.name);

  constructor(
    private readonly database: DatabaseService,
    private readonly scheduler: SchedulerRegistry,
    private readonly config: AppConfig,
  ) {}

  /** Takes `key` without waiting; null when a session holds it (another replica's, or a run of this one's). */
  tryLock(key: LockKey): Promise<HeldLock | null> {
    return tryAdvisoryLock(this.database.db, key);
  }

  /**
   * Cron job `name` (in Nest's SchedulerRegistry) on `cronTime`, on worker replicas only; none when `cronTime` is null
   * (off). Each tick takes `key` first, and a replica that finds it held skips the tick. `tick` gets the lock and
   * lets it go: at once, or when the work it started in the background ends. A tick that fails is logged; the next
   * one runs as usual.
   */
  schedule(name: string, cronTime: string | null, key: LockKey, tick: (lock: HeldLock) => Promise<unknown>): ScheduledJob {
    if (!this.config.runsWorker || !cronTime) return { stop: () => undefined };
    const job = CronJob.from({ cronTime, onTick: () => void this.tick(name, key, tick), start: true });
    this.scheduler.addCronJob(name, job);
    return {
      stop: () => {
        if (this.scheduler.doesExist('cron', name)) this.scheduler.deleteCronJob(name);
      },
    };
  }

  private async tick(name: string, key: LockKey, tick: (lock: HeldLock) => Promise<unknown>): Promise<void> {
    try {
      const lock = await this.tryLock(key);
      if (!lock) {
        this.logger.debug(`Scheduled ${name} skipped: it is running on another replica, or already on this one`);
        return;
      }
      await tick(lock);
    } catch (error) {
      this.logger.error(`Scheduled ${name} failed: ${(error as Error).message}`);
    }
  }
}
