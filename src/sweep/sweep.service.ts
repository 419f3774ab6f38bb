import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { HeldLock, LockKey } from '../database/advisory-lock';
import type { Db } from '../database/database.service';
import { PozyProtocolError } from '../pozy/pozy-errors';
import { LockedSchedule, ScheduledJob } from '../schedule/locked-schedule';
import { runView, SweepRunResponse } from './dto/sweep-run.response';
import { LostRunError, RunKind, RunTrigger, SweepRun, SweepRunRepository } from './sweep-run.repository';
import { StopRequested, SweepRunner } from './sweep-runner';
import { DEFAULT_WORKSPACE } from '../common/workspace-id';

/** How often a worker looks for a run to start or resume (an import not done yet, a run whose replica died). */
const SUPERVISE_EVERY_MS = 10_000;
/** A failed import is tried again (from its checkpoint) this long after it failed. */
const IMPORT_RETRY_AFTER_MS = 60_000;

export type StartResult = { started: true; runId: string } | { started: false; runningRunId: string | null };

/**
 * Where the import stands: `pending` (INITIAL_IMPORT=auto, no worker has started it yet), `running`, `succeeded`,
 * `failed` (tried again from its checkpoint a minute later), `not_needed` (a full sweep already listed the
 * workspace), `off` (INITIAL_IMPORT=off and none ran).
 */
export type ImportState = 'pending' | 'running' | 'succeeded' | 'failed' | 'not_needed' | 'off';

export interface RunsStatus {
  import: { status: ImportState; run: SweepRunResponse | null };
  lastSweep: SweepRunResponse | null;
}

/**
 * Starts and resumes runs, one at a time across every replica (an advisory lock held for the whole run):
 * - the import, on the first start against a database where no run ever completed (INITIAL_IMPORT=auto);
 * - a full sweep, on `POST /admin/sweep` or on SWEEP_CRON;
 * - any run left `running` by a replica that stopped or died, from its checkpoint.
 */
@Injectable()
export class SweepService implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(SweepService.name);
  /** This replica, as a run's owner. */
  private readonly owner = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  private current: { runId: string; done: Promise<void> } | undefined;
  private supervising = false;
  private readonly stopping = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private cron: ScheduledJob | undefined;

  constructor(
    private readonly runner: SweepRunner,
    private readonly runs: SweepRunRepository,
    private readonly jobs: LockedSchedule,
    private readonly config: AppConfig,
  ) {}

  /** The import and the last sweep, for GET /sync/status, the status page and /metrics: in their snapshot (`db`). */
  async status(db?: Db): Promise<RunsStatus> {
    const importRun = await this.runs.latest(DEFAULT_WORKSPACE, 'import', db);
    const sweepRun = await this.runs.latest(DEFAULT_WORKSPACE, 'sweep', db);
    let state: ImportState;
    if (importRun && importRun.status !== 'failed') state = importRun.status;
    // A failed import is not tried again once a full sweep has listed the workspace instead.
    else if (await this.runs.completedOnce(DEFAULT_WORKSPACE, db)) state = 'not_needed';
    else if (importRun) state = importRun.status;
    else state = this.config.initialImport ? 'pending' : 'off';
    return { import: { status: state, run: importRun ? runView(importRun) : null }, lastSweep: sweepRun ? runView(sweepRun) : null };
  }

  /** The first look for a run to start or resume is part of the start: a run it finds goes on in the background. */
  async onApplicationBootstrap(): Promise<void> {
    if (!this.config.runsWorker) return;
    this.cron = this.jobs.schedule('sweep', this.config.sweepCron, async () => (await this.start('schedule', false)).started);
    this.timer = setInterval(() => void this.supervise(), SUPERVISE_EVERY_MS);
    await this.supervise();
  }

  /** Before the Pozy client and the budget close (this module is destroyed before those it imports). */
  async onModuleDestroy(): Promise<void> {
    this.stopping.abort();
    clearInterval(this.timer);
    this.cron?.stop();
    // A run stops after its current page and stays `running`: the next start resumes it from there.
    await this.current?.done;
  }

  /** Starts a full sweep unless a run is under way on some replica; it goes on in the background. */
  async start(trigger: Exclude<RunTrigger, 'auto'>, dryRun: boolean): Promise<StartResult> {
    const lock = await this.lockUnlessRunning();
    if (!lock.held) return { started: false, runningRunId: lock.runningRunId };
    try {
      const run = await this.runs.create({ workspaceId: DEFAULT_WORKSPACE, id: randomUUID(), kind: 'sweep', trigger, dryRun, owner: this.owner });
      this.launch(run, lock.held);
      return { started: true, runId: run.id };
    } catch (error) {
      await lock.held.release();
      throw error;
    }
  }

  /**
   * The lock, unless a run is under way. A run that has just ended may still hold it for a moment (its status is
   * written before the lock is let go): that is waited for, not refused. A run left behind by a dead replica is
   * resumed here rather than started beside.
   */
  private async lockUnlessRunning(): Promise<{ held: HeldLock; runningRunId?: undefined } | { held: null; runningRunId: string | null }> {
    for (let attempt = 0; ; attempt += 1) {
      // The run may end (and clear this.current) during the await below: keep the one looked at.
      const current = this.current;
      if (current) {
        if ((await this.runs.get(current.runId))?.status === 'running') return { held: null, runningRunId: current.runId };
        await current.done;
      }
      const held = await this.jobs.tryLock(LockKey.Sweep);
      if (held) {
        try {
          const orphan = await this.runs.running(DEFAULT_WORKSPACE);
          if (!orphan) return { held };
          this.logger.warn(`Resuming ${orphan.kind} ${orphan.id}, left behind by its replica, instead of starting a sweep beside it`);
          this.launch(await this.runs.claim(orphan.id, this.owner), held);
          return { held: null, runningRunId: orphan.id };
        } catch (error) {
          await held.release();
          throw error;
        }
      }
      const running = await this.runs.running(DEFAULT_WORKSPACE);
      if (running || attempt >= 40) return { held: null, runningRunId: running?.id ?? null };
      // Held, yet nothing runs: a run letting go of it this very moment.
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /** The run this replica is executing, if any. */
  get runningHere(): string | undefined {
    return this.current?.runId;
  }

  private async supervise(): Promise<void> {
    if (this.supervising || this.current || this.stopping.signal.aborted) return;
    this.supervising = true;
    let lock: HeldLock | null = null;
    try {
      lock = await this.jobs.tryLock(LockKey.Sweep);
      if (!lock) return;
      const run = await this.nextRun();
      if (run) {
        this.launch(run, lock);
        lock = null;
      }
    } catch (error) {
      this.logger.warn(`Looking for a run to start failed: ${(error as Error).message}`);
    } finally {
      this.supervising = false;
      await lock?.release();
    }
  }

  /** With the lock held: a run left behind, else the import if one is due; claimed by this replica. */
  private async nextRun(): Promise<SweepRun | undefined> {
    // Nobody holds the lock, so a run still marked running has lost its replica.
    const orphan = await this.runs.running(DEFAULT_WORKSPACE);
    if (orphan) {
      this.logger.warn(`Resuming ${orphan.kind} ${orphan.id} from its checkpoint (${orphan.postsDone} posts done)`);
      return this.runs.claim(orphan.id, this.owner);
    }
    if (!this.config.initialImport || (await this.runs.completedOnce(DEFAULT_WORKSPACE))) return undefined;
    const last = await this.runs.latest(DEFAULT_WORKSPACE, 'import');
    if (last?.status === 'failed') {
      if (last.finishedAt && last.readAt.getTime() - last.finishedAt.getTime() < IMPORT_RETRY_AFTER_MS) return undefined;
      this.logger.warn(`Trying the import ${last.id} again from its checkpoint (it failed: ${last.error})`);
      return this.runs.claim(last.id, this.owner);
    }
    this.logger.log('No run has listed this workspace yet: importing every account and post from Pozy (INITIAL_IMPORT=auto)');
    return this.runs.create({ workspaceId: DEFAULT_WORKSPACE, id: randomUUID(), kind: 'import', trigger: 'auto', dryRun: false, owner: this.owner });
  }

  private launch(run: SweepRun, lock: HeldLock): void {
    const done = this.execute(run).finally(async () => {
      this.current = undefined;
      await lock.release();
    });
    this.current = { runId: run.id, done };
  }

  private async execute(run: SweepRun): Promise<void> {
    try {
      await this.runner.execute(run, this.owner, this.stopping.signal);
    } catch (error) {
      if (error instanceof StopRequested) {
        await this.runs.release(run.id, this.owner).catch(() => undefined);
        this.logger.log(`${kindName(run.kind)} ${run.id} stopped at its checkpoint; the next start resumes it`);
        return;
      }
      if (error instanceof LostRunError) {
        this.logger.warn(error.message);
        return;
      }
      // Pozy refused what retrying cannot change (a bad key, a malformed answer), or our own database failed. A
      // failed import is tried again later from its checkpoint; if even this cannot be written, the run stays
      // `running` and the next look resumes it.
      const message = error instanceof PozyProtocolError ? error.message : `${(error as Error).name}: ${(error as Error).message}`;
      this.logger.error(`${kindName(run.kind)} ${run.id} failed: ${message}`);
      await this.runs.finish(run.id, this.owner, 'failed', message).catch(() => undefined);
    }
  }
}

const kindName = (kind: RunKind) => (kind === 'import' ? 'Import' : 'Sweep');
