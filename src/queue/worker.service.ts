import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap, OnModuleInit } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { EventEmitter } from 'node:events';
import { run, Runner, Task, TaskList, WorkerEvents } from 'graphile-worker';
import { AppConfig } from '../config/app-config';
import { DatabaseService } from '../database/database.service';
import { PrimaryWatch } from '../database/primary-watch';
import { graphileLogger } from './graphile-logger';
import { JobQueueRepository } from './job-queue.repository';
import { JobHandler, TaskHandler } from './task-handler.decorator';
import { HEARTBEAT_MS, WorkerHeartbeat } from './worker-heartbeat';
import { TASK_NAMES, TaskName, TASKS } from './tasks';

/** How long after a runner stopped on its own a new one starts. */
const RESTART_MS = 1_000;

/** A job whose payload does not validate: a bug to see, so it fails (and stays visible in the queue with its error). */
export class InvalidJobPayloadError extends Error {}

/** Runs graphile-worker inside the service: every task in TASKS, each through its @TaskHandler provider. */
@Injectable()
export class WorkerService implements OnModuleInit, OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(WorkerService.name);
  private taskList: TaskList = {};
  private runner: Runner | undefined;
  private heartbeat: WorkerHeartbeat | undefined;
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private restartTimer: NodeJS.Timeout | undefined;
  private restarting: Promise<void> | undefined;
  /** Heartbeats of replaced or stopped runners whose pool could not be forgotten yet (the database was down). */
  private readonly unforgotten: WorkerHeartbeat[] = [];
  private stopping = false;
  /** Jobs run by this process, by outcome (a failed attempt is retried later with backoff). */
  readonly stats = { completed: 0, failed: 0 };
  /** Jobs running in this process now, and when the latest began (ms since the epoch): see `busy`. */
  private jobsRunning = 0;
  private lastJobStartedAt = -Infinity;

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly database: DatabaseService,
    private readonly queue: JobQueueRepository,
    private readonly config: AppConfig,
    primary: PrimaryWatch,
  ) {
    primary.onWritable((change) => this.afterOutage(change.kind));
  }

  /**
   * A writable primary again after none (or another): the runner is replaced, and jobs that failed for want of the
   * database run now rather than after their backoff. Replaced, because graphile-worker keeps the jobs it could not mark
   * done or failed on a lost connection locked by its pool for hours; a new pool's heartbeat releases them at once.
   */
  private afterOutage(kind: string): void {
    if (!this.config.runsWorker || this.stopping) return;
    void this.replaceRunner(`a writable primary again (${kind})`)
      .then(() => this.queue.retryDatabaseFailures())
      .then((due) => due > 0 && this.logger.log(`${due} job(s) that failed on the database are due now`))
      .catch((error: unknown) => this.logger.warn(`Could not make failed jobs due: ${(error as Error).message}`));
  }

  private async replaceRunner(why: string): Promise<void> {
    const runner = this.runner;
    // None running: one is being started (after it stopped on its own), on the primary there is now.
    if (!runner) return;
    this.runner = undefined;
    clearInterval(this.heartbeatTimer);
    const heartbeat = this.heartbeat;
    this.heartbeat = undefined;
    this.logger.warn(`Replacing the job runner: ${why}`);
    // Its jobs finish or fail on their own; its pool is forgotten now, so its locked jobs are orphans to release.
    void runner.stop().catch((error: unknown) => this.logger.warn(`The replaced job runner did not stop cleanly: ${(error as Error).message}`));
    await this.forget(heartbeat);
    clearTimeout(this.restartTimer);
    this.restarting = this.start().catch((error: unknown) => {
      this.logger.error(`Starting a new job runner failed: ${(error as Error).message}`);
      if (!this.runner) this.startLater();
    });
    await this.restarting;
  }

  /** Refuses to boot when a task has no handler (or two), before the service accepts anything. */
  onModuleInit(): void {
    const handlers = new Map<TaskName, JobHandler<TaskName>[]>();
    for (const wrapper of this.discovery.getProviders({ metadataKey: TaskHandler.KEY })) {
      const name = this.discovery.getMetadataByDecorator(TaskHandler, wrapper);
      if (name === undefined || !wrapper.instance) continue;
      handlers.set(name, [...(handlers.get(name) ?? []), wrapper.instance as JobHandler<TaskName>]);
    }
    const missing = TASK_NAMES.filter((name) => !handlers.has(name));
    if (missing.length > 0) throw new Error(`No @TaskHandler for task(s): ${missing.join(', ')}`);
    const doubled = [...handlers].filter(([, list]) => list.length > 1).map(([name]) => name);
    if (doubled.length > 0) throw new Error(`More than one @TaskHandler for task(s): ${doubled.join(', ')}`);
    const unknown = [...handlers.keys()].filter((name) => !TASK_NAMES.includes(name));
    if (unknown.length > 0) throw new Error(`@TaskHandler for unknown task(s): ${unknown.join(', ')}`);
    this.taskList = Object.fromEntries(TASK_NAMES.map((name) => [name, this.wrap(name, handlers.get(name)![0])]));
  }

  async onApplicationBootstrap(): Promise<void> {
    if (!this.config.runsWorker) {
      this.logger.log('ROLE=api: jobs are left to worker replicas');
      return;
    }
    await this.start();
  }

  private async start(): Promise<void> {
    const events: WorkerEvents = new EventEmitter();
    const poolCreated = new Promise<string>((resolve) => events.once('pool:create', ({ workerPool }) => resolve(workerPool.id)));
    const runner = await run({
      events,
      pgPool: this.database.pool,
      taskList: this.taskList,
      concurrency: this.config.workerConcurrency,
      // Signals belong to main.ts, which shuts the whole service down in order.
      noHandleSignals: true,
      // Schedules belong to @nestjs/schedule; an empty crontab keeps graphile-worker from looking for a file.
      parsedCronItems: [],
      pollInterval: 2_000,
      gracefulShutdownAbortTimeout: this.config.shutdownGraceMs,
      logger: graphileLogger,
      preset: {
        worker: {
          // Fetch and complete jobs in batches: one query serves several short jobs (graphile-worker's batching).
          // Otherwise a query per job's fetch and completion competes with webhooks for the pool under load. Kept
          // small, since jobs a crashed replica had fetched stay locked until graphile-worker resets them.
          localQueue: { size: this.config.workerConcurrency * 2 },
          completeJobBatchDelay: 0,
          failJobBatchDelay: 0,
        },
      },
    });
    this.runner = runner;
    // graphile-worker announces its pool as it creates it, inside run(); never wait on it forever.
    const poolId = await Promise.race([poolCreated, new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 5_000).unref())]);
    if (poolId) await this.startHeartbeat(poolId);
    else this.logger.warn('graphile-worker did not announce its pool: jobs of killed workers stay locked for 4 h');
    runner.events.on('job:success', () => (this.stats.completed += 1));
    runner.events.on('job:error', () => (this.stats.failed += 1));
    // graphile-worker stops its runner when its worker pool fails (no connection within the pool's timeout, on a
    // machine out of breath): without a new one, this replica would run no job again, every read left waiting.
    void runner.promise.then(
      () => this.stoppedOnItsOwn(runner, 'its worker pool ended'),
      (error: unknown) => this.stoppedOnItsOwn(runner, (error as Error).message),
    );
    this.logger.log(`Worker running (${TASK_NAMES.join(', ')}; concurrency ${this.config.workerConcurrency})`);
  }

  /** A runner that ended without beforeApplicationShutdown: its pool is given up (its jobs released) and a new one starts. */
  private stoppedOnItsOwn(runner: Runner, why: string): void {
    if (this.runner !== runner || this.stopping) return;
    this.runner = undefined;
    clearInterval(this.heartbeatTimer);
    const heartbeat = this.heartbeat;
    this.heartbeat = undefined;
    this.logger.error(`The job runner stopped on its own (${why}); starting a new one in ${RESTART_MS} ms`);
    // Forgetting the dead pool lets the new one's heartbeat release the jobs it had locked.
    void this.forget(heartbeat);
    this.startLater();
  }

  private startLater(): void {
    if (this.stopping) return;
    this.restartTimer = setTimeout(() => {
      this.restarting = this.start().catch((error: unknown) => {
        this.logger.error(`Starting a new job runner failed: ${(error as Error).message}`);
        // A runner that started before the failure (its heartbeat's) runs on: never two at once.
        if (!this.runner) this.startLater();
      });
    }, RESTART_MS);
  }

  /** Lets running jobs finish; past SHUTDOWN_GRACE_MS they are released back to the queue to run again. */
  async beforeApplicationShutdown(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.restartTimer);
    await this.restarting;
    if (!this.runner) return;
    const runner = this.runner;
    this.runner = undefined;
    await runner.stop();
    // Only now: jobs still finishing during the grace period must not look orphaned to other replicas.
    clearInterval(this.heartbeatTimer);
    await this.heartbeat?.stop().catch(() => undefined);
    this.logger.log('Worker stopped');
  }

  /** Forgets a runner's pool, or keeps it to forget when the next runner starts: its jobs are released either way. */
  private async forget(heartbeat: WorkerHeartbeat | undefined): Promise<void> {
    await heartbeat?.stop().catch(() => this.unforgotten.push(heartbeat));
  }

  /** Says this pool is alive, and takes back the jobs of pools that died (now, and on every beat). */
  private async startHeartbeat(poolId: string): Promise<void> {
    // A pool that could not be forgotten in the outage that stopped it: forgotten now, so its jobs go on this beat.
    for (const dead of this.unforgotten.splice(0)) await this.forget(dead);
    const heartbeat = new WorkerHeartbeat(this.queue, poolId);
    this.heartbeat = heartbeat;
    const beat = async () => {
      await heartbeat.beat();
      const released = await heartbeat.releaseOrphans();
      if (released > 0) this.logger.warn(`Unlocked ${released} job(s) left locked by a worker that died`);
    };
    await beat();
    this.heartbeatTimer = setInterval(() => {
      beat().catch((error: unknown) => this.logger.warn(`Worker heartbeat failed: ${(error as Error).message}`));
    }, HEARTBEAT_MS);
  }

  get running(): boolean {
    return this.runner !== undefined;
  }

  /**
   * Whether this process runs a job now or began one within `withinMs`: realtime work (a read an event asked for) that
   * bulk work on the same database (an import's pages) should give way to.
   */
  busy(withinMs: number, now = Date.now()): boolean {
    return this.jobsRunning > 0 || now - this.lastJobStartedAt < withinMs;
  }

  private wrap<N extends TaskName>(name: N, handler: JobHandler<N>): Task {
    return async (raw, helpers) => {
      const payload = plainToInstance(TASKS[name], raw ?? {});
      const errors = validateSync(payload, { whitelist: true, forbidNonWhitelisted: true });
      if (errors.length > 0) {
        throw new InvalidJobPayloadError(
          `Invalid ${name} payload: ${errors.map((e) => `${e.property} (${Object.values(e.constraints ?? {}).join('; ')})`).join(', ')}`,
        );
      }
      this.jobsRunning += 1;
      this.lastJobStartedAt = Date.now();
      try {
        await handler.handle(payload as Parameters<JobHandler<N>['handle']>[0], helpers);
      } finally {
        this.jobsRunning -= 1;
      }
    };
  }
}
