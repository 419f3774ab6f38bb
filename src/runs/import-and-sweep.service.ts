import { randomUUID } from 'node:crypto';
import { OpsEvents } from '../notifications/ops-events.service';
import { hostname } from 'node:os';
import { setTimeout as delay } from 'node:timers/promises';
import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { HeldLock, LockKey, LockName, workspaceLockPart } from '../database/advisory-lock';
import type { Db } from '../database/database.service';
import { PozyProtocolError } from '../pozy/pozy-errors';
import { isDatabaseUnavailable } from '../common/database-errors';
import { LockedSchedule, ScheduledJob } from '../schedule/locked-schedule';
import { runView, SweepRunResponse } from './dto/sweep-run.response';
import { LostRunError, RunKind, RunTrigger, SweepRun, SweepRunRepository } from './sweep-run.repository';
import { StopRequested, SweepRunner } from './import-and-sweep-runner';
import { WakeableLoop } from '../common/wakeable-loop';
import { DEFAULT_WORKSPACE, WorkspaceId } from '../common/workspace-id';
import { MirroredWorkspace, WorkspaceRegistry } from '../workspaces/workspace-registry.service';

/** How often a worker looks for a run to start or resume (an import not done yet, a run whose replica died). */
const SUPERVISE_EVERY_MS = 10_000;
/** A failed import is tried again (from its checkpoint) this long after it failed. */
const IMPORT_RETRY_AFTER_MS = 60_000;
/**
 * A run stopped by a database with no connection to give, or none that takes writes (a failover), waits this long
 * before it is resumed, doubling with each such stop in a row; past NO_CONNECTION_STOPS in a row it has lasted about a minute and fails like any other error.
 */
const NO_CONNECTION_PAUSE_MS = 2_000;
const NO_CONNECTION_STOPS = 5;
/**
 * A failed import is told of (`ops.import.failed`) at most once in each such span of its run's life, counted from the
 * run's start on the database's clock: retried every IMPORT_RETRY_AFTER_MS, a lasting failure would otherwise send
 * sixty an hour.
 */
const IMPORT_FAILURE_TOLD_EVERY_MS = 3_600_000;

export type StartResult = { started: true; runId: string } | { started: false; runningRunId: string | null };

/**
 * Where the import stands: `pending` (INITIAL_IMPORT=auto, no worker has started it yet), `queued` (waiting for one of
 * IMPORT_CONCURRENCY's places, `position` in line), `running`, `succeeded`, `failed` (tried again from its checkpoint
 * a minute later), `not_needed` (a full sweep already listed the workspace), `off` (INITIAL_IMPORT=off and none ran).
 */
export type ImportState = 'pending' | 'queued' | 'running' | 'succeeded' | 'failed' | 'not_needed' | 'off';

export interface RunsStatus {
  import: { status: ImportState; run: SweepRunResponse | null; position?: number };
  lastSweep: SweepRunResponse | null;
}

/** `default` keeps the lock it always had, so replicas of the version before workspaces still exclude each other. */
const sweepLock = (workspaceId: WorkspaceId): LockName =>
  workspaceId === DEFAULT_WORKSPACE ? LockKey.Sweep : [LockKey.WorkspaceSweep, workspaceLockPart(workspaceId)];

/** A run this replica executes: stopped at its next checkpoint when the service stops or its workspace stops being active. */
interface Execution {
  runId: string;
  kind: RunKind;
  done: Promise<void>;
  stop: AbortController;
}

/**
 * Starts and resumes runs, per workspace, one at a time per workspace across every replica (an advisory lock held for
 * the whole run), and imports at most IMPORT_CONCURRENCY at once across every replica (a slot lock each):
 * - the import of a workspace no run ever listed (INITIAL_IMPORT=auto), in the order workspaces were added;
 * - a full sweep, on `POST /admin/sweep` (`/admin/workspaces/:id/sweep`) or on SWEEP_CRON (every workspace in turn);
 * - any run left `running` by a replica that stopped or died, from its checkpoint.
 */
@Injectable()
export class SweepService implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(SweepService.name);
  /** This replica, as a run's owner. */
  private readonly owner = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  private readonly current = new Map<WorkspaceId, Execution>();
  /**
   * Runs stopped by a database with no connection to give, by run id: how many times in a row (with no post written
   * in between), and the posts done when the last of them was launched.
   */
  private readonly noConnectionStops = new Map<string, { stops: number; moved: number }>();
  private readonly stopping = new AbortController();
  /** The supervisor's looks: every SUPERVISE_EVERY_MS, and at once when woken (a place freed, the registry changed). */
  private readonly looks = new WakeableLoop({
    pass: async () => {
      await this.lookOnce();
      return null;
    },
    idleMs: SUPERVISE_EVERY_MS,
    retryMs: SUPERVISE_EVERY_MS,
    logger: this.logger,
    what: 'Looking for a run to start',
  });
  private cron: ScheduledJob | undefined;
  /** The imports waiting for a place, in order, as this replica's supervisor last saw them. */
  private queued: WorkspaceId[] = [];

  constructor(
    private readonly runner: SweepRunner,
    private readonly runs: SweepRunRepository,
    private readonly jobs: LockedSchedule,
    private readonly config: AppConfig,
    private readonly workspaces: WorkspaceRegistry,
    private readonly ops: OpsEvents,
  ) {
    // A workspace paused or being removed stops its run at the next checkpoint, on the replica running it.
    workspaces.onChange((ids) => {
      for (const id of ids) if (!workspaces.active(id)) this.current.get(id)?.stop.abort();
      // Before the first look at boot (and once stopped) the loop is not running: a wake-up is a no-op.
      this.looks.wake();
    });
  }

  /** A workspace's import and last sweep, for the status, /metrics and the workspace's state: in their snapshot (`db`). */
  async status(db?: Db, workspaceId: WorkspaceId = DEFAULT_WORKSPACE): Promise<RunsStatus> {
    const importRun = await this.runs.latest(workspaceId, 'import', db);
    const sweepRun = await this.runs.latest(workspaceId, 'sweep', db);
    let state: ImportState;
    let position: number | undefined;
    if (importRun && importRun.status !== 'failed') state = importRun.status;
    // A failed import is not tried again once a full sweep has listed the workspace instead.
    else if (await this.runs.completedOnce(workspaceId, db)) state = 'not_needed';
    else if (importRun) state = importRun.status;
    else if (!this.config.initialImport) state = 'off';
    else if (this.queued.includes(workspaceId)) {
      state = 'queued';
      position = this.queued.indexOf(workspaceId) + 1;
    } else state = 'pending';
    return {
      import: { status: state, run: importRun ? runView(importRun) : null, ...(position ? { position } : {}) },
      lastSweep: sweepRun ? runView(sweepRun) : null,
    };
  }

  /** How many active workspaces' import has failed (state `failed`), every workspace read in one statement, in the snapshot `db`. */
  failedImports(db?: Db): Promise<number> {
    return this.runs.failedImports(this.workspaces.environmentDefinesDefault, db);
  }

  /** The first look for a run to start or resume is part of the start: a run it finds goes on in the background. */
  async onApplicationBootstrap(): Promise<void> {
    if (!this.config.runsWorker) return;
    this.cron = this.jobs.schedule('sweep', this.config.sweepCron, async () => {
      let started = false;
      for (const workspace of this.workspaces.all()) {
        if (workspace.state === 'active' && (await this.start('schedule', false, workspace.id)).started) started = true;
      }
      return started;
    });
    await this.lookOnce();
    this.looks.start(SUPERVISE_EVERY_MS);
  }

  /** Before the Pozy client and the budget close (this module is destroyed before those it imports). */
  async onModuleDestroy(): Promise<void> {
    this.stopping.abort();
    await this.looks.stop();
    this.cron?.stop();
    for (const execution of this.current.values()) execution.stop.abort();
    // A run stops after its current page and stays `running`: the next start resumes it from there.
    await Promise.all([...this.current.values()].map((execution) => execution.done));
  }

  /** Starts a full sweep of the workspace unless a run of it is under way on some replica; it goes on in the background. */
  async start(trigger: Exclude<RunTrigger, 'auto'>, dryRun: boolean, workspaceId: WorkspaceId = DEFAULT_WORKSPACE): Promise<StartResult> {
    const workspace = this.workspaces.active(workspaceId);
    if (!workspace) return { started: false, runningRunId: null };
    const lock = await this.lockUnlessRunning(workspace);
    if (!lock.held) return { started: false, runningRunId: lock.runningRunId };
    try {
      const run = await this.runs.create({ workspaceId, id: randomUUID(), kind: 'sweep', trigger, dryRun, owner: this.owner });
      this.launch(workspace, run, [lock.held]);
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
  private async lockUnlessRunning(
    workspace: MirroredWorkspace,
  ): Promise<{ held: HeldLock; runningRunId?: undefined } | { held: null; runningRunId: string | null }> {
    for (let attempt = 0; ; attempt += 1) {
      // The run may end (and leave this.current) during the await below: keep the one looked at.
      const current = this.current.get(workspace.id);
      if (current) {
        if ((await this.runs.get(current.runId))?.status === 'running') return { held: null, runningRunId: current.runId };
        await current.done;
      }
      const held = await this.jobs.tryLock(sweepLock(workspace.id));
      if (held) {
        try {
          const orphan = await this.runs.running(workspace.id);
          if (!orphan) return { held };
          this.logger.warn(
            `Resuming ${orphan.kind} ${orphan.id} of ${workspace.id}, left behind by its replica, instead of starting a sweep beside it`,
          );
          this.launch(workspace, await this.runs.claim(orphan.id, this.owner), [held]);
          return { held: null, runningRunId: orphan.id };
        } catch (error) {
          await held.release();
          throw error;
        }
      }
      const running = await this.runs.running(workspace.id);
      if (running || attempt >= 40) return { held: null, runningRunId: running?.id ?? null };
      // Held, yet nothing runs: a run letting go of it this very moment.
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /**
   * One look over every active workspace: runs left behind are resumed; imports due start while one of
   * IMPORT_CONCURRENCY's places is free (across replicas), in the order workspaces were added; the rest are queued.
   * One statement reads every workspace's runs, however many there are.
   */
  private async lookOnce(): Promise<void> {
    if (this.stopping.signal.aborted) return;
    try {
      const overview = await this.runs.overview();
      const waiting: WorkspaceId[] = [];
      let slotsFree = true;
      for (const workspace of this.workspaces.all()) {
        if (this.stopping.signal.aborted) break;
        if (workspace.state !== 'active' || this.current.has(workspace.id)) continue;
        const runs = overview.get(workspace.id);
        const importDue = this.config.initialImport && !runs?.completed;
        if (!runs?.running && !importDue) continue;
        if (!runs?.running && !slotsFree) {
          waiting.push(workspace.id);
          continue;
        }
        const outcome = await this.superviseOne(workspace);
        if (outcome === 'no_slot') {
          slotsFree = false;
          waiting.push(workspace.id);
        }
      }
      this.queued = waiting;
    } catch (error) {
      this.logger.warn(`Looking for a run to start failed: ${(error as Error).message}`);
    }
  }

  /** With the workspace's lock: its run left behind, else its import if one is due and a place is free. */
  private async superviseOne(workspace: MirroredWorkspace): Promise<'launched' | 'none' | 'no_slot'> {
    let lock: HeldLock | null = await this.jobs.tryLock(sweepLock(workspace.id));
    if (!lock) return 'none';
    let slot: HeldLock | null = null;
    try {
      // Nobody holds the lock, so a run still marked running has lost its replica.
      const orphan = await this.runs.running(workspace.id);
      if (orphan) {
        if (orphan.kind === 'import') slot = await this.importSlot();
        if (orphan.kind === 'import' && !slot) return 'no_slot';
        this.logger.warn(`Resuming ${orphan.kind} ${orphan.id} of ${workspace.id} from its checkpoint (${orphan.postsDone} posts done)`);
        this.launch(workspace, await this.runs.claim(orphan.id, this.owner), [lock, ...(slot ? [slot] : [])]);
        lock = slot = null;
        return 'launched';
      }
      if (!this.config.initialImport || (await this.runs.completedOnce(workspace.id))) return 'none';
      const last = await this.runs.latest(workspace.id, 'import');
      if (last?.status === 'failed' && last.finishedAt && last.readAt.getTime() - last.finishedAt.getTime() < IMPORT_RETRY_AFTER_MS) return 'none';
      slot = await this.importSlot();
      if (!slot) return 'no_slot';
      let run: SweepRun;
      if (last?.status === 'failed') {
        this.logger.warn(`Trying the import ${last.id} of ${workspace.id} again from its checkpoint (it failed: ${last.error})`);
        run = await this.runs.claim(last.id, this.owner);
      } else {
        this.logger.log(`No run has listed workspace ${workspace.id} yet: importing every account and post from Pozy (INITIAL_IMPORT=auto)`);
        run = await this.runs.create({
          workspaceId: workspace.id,
          id: randomUUID(),
          kind: 'import',
          trigger: 'auto',
          dryRun: false,
          owner: this.owner,
        });
      }
      this.launch(workspace, run, [lock, slot]);
      lock = slot = null;
      return 'launched';
    } finally {
      await slot?.release();
      await lock?.release();
    }
  }

  /** One of IMPORT_CONCURRENCY's places, held by an import until it ends; null when every one is taken. */
  private async importSlot(): Promise<HeldLock | null> {
    for (let slot = 0; slot < this.config.importConcurrency; slot += 1) {
      const held = await this.jobs.tryLock([LockKey.ImportSlot, slot]);
      if (held) return held;
    }
    return null;
  }

  private launch(workspace: MirroredWorkspace, run: SweepRun, locks: HeldLock[]): void {
    const stop = new AbortController();
    const onStopping = () => stop.abort();
    this.stopping.signal.addEventListener('abort', onStopping, { once: true });
    const done = this.execute(workspace, run, stop.signal).finally(async () => {
      this.stopping.signal.removeEventListener('abort', onStopping);
      this.current.delete(workspace.id);
      await Promise.all(locks.map((lock) => lock.release()));
      // A place freed: the next import in line need not wait for the next look.
      if (run.kind === 'import') this.looks.wake();
    });
    this.current.set(workspace.id, { runId: run.id, kind: run.kind, done, stop });
  }

  private async execute(workspace: MirroredWorkspace, run: SweepRun, stop: AbortSignal): Promise<void> {
    const before = this.noConnectionStops.get(run.id);
    this.noConnectionStops.delete(run.id);
    try {
      await this.runner.execute(run, this.owner, stop, workspace.client);
      if (run.kind === 'import') await this.tellImport(workspace.id, run, 'succeeded', null);
    } catch (error) {
      if (error instanceof StopRequested) {
        await this.runs.release(run.id, this.owner).catch(() => undefined);
        this.logger.log(`${kindName(run.kind)} ${run.id} of ${workspace.id} stopped at its checkpoint; the next start resumes it`);
        return;
      }
      if (error instanceof LostRunError) {
        this.logger.warn(error.message);
        return;
      }
      // In a row: the launch before this one wrote nothing more (pages read count too: a later pass adds few posts).
      const moved = run.postsDone + run.pagesRead;
      const stops = before && before.moved >= moved ? before.stops + 1 : 1;
      if (isDatabaseUnavailable(error) && stops <= NO_CONNECTION_STOPS) {
        // A busy database (no connection within the pool's timeout) is not the run's failure: it is resumed from its
        // checkpoint shortly, by the next look here or on another replica, rather than failed, told of, and left a minute.
        const waitMs = NO_CONNECTION_PAUSE_MS * 2 ** (stops - 1);
        const message = `no writable database connection (${(error as Error).message}); resumed from its checkpoint in ${waitMs / 1000} s`;
        this.logger.warn(`${kindName(run.kind)} ${run.id} of ${workspace.id}: ${message}`);
        this.noConnectionStops.set(run.id, { stops, moved });
        await this.runs.noteError(run.id, this.owner, message).catch(() => undefined);
        await delay(waitMs, undefined, { signal: stop }).catch(() => undefined);
        await this.runs.release(run.id, this.owner).catch(() => undefined);
        return;
      }
      // Pozy refused what retrying cannot change (a bad key, a malformed answer), or our own database failed. A
      // failed import is tried again later from its checkpoint; if even this cannot be written, the run stays
      // `running` and the next look resumes it.
      const message = error instanceof PozyProtocolError ? error.message : `${(error as Error).name}: ${(error as Error).message}`;
      this.logger.error(`${kindName(run.kind)} ${run.id} of ${workspace.id} failed: ${message}`);
      await this.runs.finish(run.id, this.owner, 'failed', message).catch(() => undefined);
      if (run.kind === 'import') await this.tellImport(workspace.id, run, 'failed', message);
    }
  }

  /**
   * An import's end, as an operational event. A success is told once (its run id names it: one import succeeds once).
   * A failure is told at most once an hour per run, whatever the error: the run is tried again every
   * IMPORT_RETRY_AFTER_MS, and an error's text may differ from one attempt to the next (what Pozy answered, where it
   * stopped), so keying on it could flood again; the first failure of each hour names its error, and the run (GET
   * /admin/sweep/:runId, GET /admin/workspaces/:id) always holds the latest.
   */
  private async tellImport(workspaceId: string, run: SweepRun, status: 'succeeded' | 'failed', error: string | null): Promise<void> {
    const ended = await this.runs.get(run.id).catch(() => undefined);
    let key = `import.succeeded:${run.id}`;
    if (status === 'failed') {
      // The hour of the run's life, on the database's clock (every replica counts it alike); ours if it cannot be read.
      const at = ended?.finishedAt ?? ended?.readAt ?? new Date();
      const hour = Math.max(0, Math.floor((at.getTime() - (ended ?? run).startedAt.getTime()) / IMPORT_FAILURE_TOLD_EVERY_MS));
      key = `import.failed:${run.id}:${hour}`;
    }
    const done = status === 'succeeded' ? ended : undefined;
    await this.ops.emit({
      type: status === 'succeeded' ? 'ops.import.succeeded' : 'ops.import.failed',
      key,
      workspaceId,
      data: { runId: run.id, error, ...(done ? { posts: done.posts, accounts: done.accounts, pagesRead: done.pagesRead } : {}) },
    });
  }
}

const kindName = (kind: RunKind) => (kind === 'import' ? 'Import' : 'Sweep');
