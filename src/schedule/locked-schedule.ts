import { Injectable, Logger } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { CronJob } from 'cron';
import { AppConfig } from '../config/app-config';
import { HeldLock, LockName, tryAdvisoryLock } from '../database/advisory-lock';
import { DatabaseService } from '../database/database.service';

/** A cron job registered by LockedSchedule.schedule(). */
export interface ScheduledJob {
  /** No tick starts after this; one under way goes on (its owner waits for the work it started). */
  stop(): void;
}

/**
 * The jobs that run on one replica at a time, each under its advisory lock (database/advisory-lock.ts), whether a
 * schedule or an operator (POST /admin/...) starts them: the job's one entry point takes the lock with tryLock(),
 * and is refused while any replica holds it. On a schedule, every worker replica ticks: the one that takes the
 * lock runs the job, the others skip that tick.
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
  tryLock(key: LockName): Promise<HeldLock | null> {
    return tryAdvisoryLock(this.database.db, key);
  }

  /**
   * Cron job `name` (in Nest's SchedulerRegistry) on `cronTime`, on worker replicas only; none when `cronTime` is null
   * (off). `tick` starts the job through its entry point, which takes the job's lock, and answers whether it ran
   * (false: the lock was held, and this replica skips the tick). A tick that fails is logged; the next one runs as
   * usual.
   */
  schedule(name: string, cronTime: string | null, tick: () => Promise<boolean>): ScheduledJob {
    if (!this.config.runsWorker || !cronTime) return { stop: () => undefined };
    const job = CronJob.from({ cronTime, onTick: () => void this.tick(name, tick), start: true });
    this.scheduler.addCronJob(name, job);
    return {
      stop: () => {
        if (this.scheduler.doesExist('cron', name)) this.scheduler.deleteCronJob(name);
      },
    };
  }

  private async tick(name: string, tick: () => Promise<boolean>): Promise<void> {
    try {
      if (!(await tick())) this.logger.debug(`Scheduled ${name} skipped: it is running on another replica, or already on this one`);
    } catch (error) {
      this.logger.error(`Scheduled ${name} failed: ${(error as Error).message}`);
    }
  }
}
