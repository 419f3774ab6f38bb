import { randomUUID } from 'node:crypto';
import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import type { Counter } from 'prom-client';
import { isDatabaseUnavailable } from '../common/database-errors';
import { AppConfig } from '../config/app-config';
import { PrimaryWatch } from '../database/primary-watch';
import { MetricsService } from '../metrics/metrics.service';
import { LockKey, LockName, workspaceLockPart } from '../database/advisory-lock';
import type { PozyClient } from '../pozy/pozy-client.service';
import { PozyWebhookLogDto } from '../pozy/dto/pozy-webhook-log.dto';
import { LockedSchedule, ScheduledJob } from '../schedule/locked-schedule';
import { ACCOUNT_EVENTS, POST_EVENTS } from '../receive/pozy-events';
import { EventReceiver } from '../receive/event-receiver';
import { BackfillRun, BackfillRunRepository } from './backfill-run.repository';
import { DEFAULT_WORKSPACE, WorkspaceId } from '../common/workspace-id';
import { WorkspaceRegistry } from '../workspaces/workspace-registry.service';
import { Span, SpanStatusCode } from '@opentelemetry/api';
import { Tracing } from '../tracing/tracing.service';

const PAGE_SIZE = 100;
/** Pozy's logs answer `skip` up to 10,000: past it, a window has to be narrowed (by event type) to be read whole. */
const MAX_SKIP = 10_000;
/** Types paged on their own when the whole window is too deep. */
const EVENT_TYPES = [...POST_EVENTS, ...ACCOUNT_EVENTS, 'webhook.test'];

class WindowTooDeepError extends Error {}

/** The run, and the workspace whose logs it reads with that workspace's client. */
interface Target {
  runId: string;
  workspaceId: WorkspaceId;
  pozy: PozyClient;
  trigger: BackfillRun['trigger'];
}

/** `default` keeps the lock it always had, so replicas of the version before workspaces still exclude each other. */
const backfillLock = (workspaceId: WorkspaceId): LockName =>
  workspaceId === DEFAULT_WORKSPACE ? LockKey.Backfill : [LockKey.WorkspaceBackfill, workspaceLockPart(workspaceId)];

type Progress = Pick<BackfillRun, 'newestLogAt' | 'rowsScanned' | 'eventsRecovered' | 'eventsSkipped' | 'narrowedTypes'>;

export type StartResult = { started: true; runId: string } | { started: false; runningRunId: string | null };

/**
 * Recovers the events Pozy logged but never delivered (it gives up after its last retry, or a delivery was lost):
 * pages `GET /v1/webhooks/logs` newest first back to the last successful run's newest row less an overlap, and
 * sends every event id we do not have through the receive path with its logged payload.
 */
@Injectable()
export class BackfillService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(BackfillService.name);
  /** The runs under way in this process, by run id: one per workspace at most. */
  private readonly current = new Map<string, Promise<void>>();
  /** Runs the database failed under (a failover), by workspace: started again once a writable primary is back. */
  private readonly interrupted = new Map<WorkspaceId, { runId: string; trigger: BackfillRun['trigger']; message: string }>();
  private cron: ScheduledJob | undefined;
  private stopping = false;
  private readonly runsFinished: Counter<'status'>;
  private readonly recovered: Counter;
  private readonly skipped: Counter;

  constructor(
    private readonly config: AppConfig,
    private readonly workspaces: WorkspaceRegistry,
    private readonly receiver: EventReceiver,
    private readonly runs: BackfillRunRepository,
    private readonly jobs: LockedSchedule,
    metrics: MetricsService,
    private readonly tracing: Tracing,
    primary: PrimaryWatch,
  ) {
    primary.onWritable(() => void this.resumeInterrupted());
    this.runsFinished = metrics.counter({
      name: 'pozy_sync_backfill_runs_total',
      help: 'Backfill runs finished by this process, by status',
      labelNames: ['status'],
    });
    this.recovered = metrics.counter({
      name: 'pozy_sync_backfill_events_recovered_total',
      help: "Events found in Pozy's delivery logs that had never reached us, stored by a backfill",
    });
    this.skipped = metrics.counter({
      name: 'pozy_sync_backfill_events_skipped_total',
      help: "Events found in Pozy's delivery logs that had never reached us and are refused as events (malformed, data PostgreSQL refuses, or older than events are kept): never stored",
    });
  }

  /** BACKFILL_CRON, when set: every active workspace in turn, one run at a time, on one replica (the others skip that tick). */
  onApplicationBootstrap(): void {
    this.cron = this.jobs.schedule('backfill', this.config.backfillCron, async () => {
      let started = false;
      for (const workspace of this.workspaces.all()) {
        if (this.stopping) break;
        if (workspace.state !== 'active') continue;
        const result = await this.start('schedule', workspace.id);
        if (!result.started) continue;
        started = true;
        await this.current.get(result.runId);
      }
      return started;
    });
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopping = true;
    this.cron?.stop();
    await Promise.all([...this.current.values()]);
  }

  /**
   * Starts a run unless one is running (here or on another replica); the run goes on in the background.
   * Resolves once the run is recorded, so its id can be followed at once.
   */
  async start(trigger: BackfillRun['trigger'], workspaceId: WorkspaceId = DEFAULT_WORKSPACE): Promise<StartResult> {
    const pozy = this.workspaces.active(workspaceId)?.client;
    // A workspace not mirrored (or paused, or being removed) has nothing to read: the caller checked, or it is a schedule.
    if (!pozy) return { started: false, runningRunId: null };
    const lock = await this.jobs.tryLock(backfillLock(workspaceId));
    if (!lock)
      return {
        started: false,
        runningRunId: await this.runs.running(workspaceId).then(
          (run) => run?.id ?? null,
          () => null,
        ),
      };
    let runId: string;
    let scanFrom: Date | null;
    try {
      const checkpoint = await this.runs.checkpoint(workspaceId);
      runId = randomUUID();
      scanFrom = checkpoint && new Date(checkpoint.getTime() - this.config.backfillOverlapMs);
      await this.runs.create({ workspaceId, id: runId, trigger, scanFrom });
    } catch (error) {
      await lock.release();
      throw error;
    }
    // The lock is held for the whole run.
    const run: Promise<void> = this.execute({ runId, workspaceId, pozy, trigger }, scanFrom).finally(async () => {
      await lock.release();
      this.current.delete(runId);
    });
    this.current.set(runId, run);
    return { started: true, runId };
  }

  /** Starts again each run a failover ended (its failure recorded first, in case the outage kept that from being written). */
  private async resumeInterrupted(): Promise<void> {
    for (const [workspaceId, run] of [...this.interrupted]) {
      if (this.stopping) return;
      this.interrupted.delete(workspaceId);
      try {
        await this.runs.finish(run.runId, 'failed', run.message);
        const result = await this.start(run.trigger, workspaceId);
        this.logger.log(
          result.started
            ? `Backfill ${run.runId} of ${workspaceId} failed with the database; resumed from its checkpoint as ${result.runId}`
            : `Backfill ${run.runId} of ${workspaceId} failed with the database; another run (${result.runningRunId ?? 'elsewhere'}) covers it`,
        );
      } catch (error) {
        this.logger.warn(`Backfill ${run.runId} of ${workspaceId} could not be resumed yet: ${(error as Error).message}`);
        this.interrupted.set(workspaceId, run);
      }
    }
  }

  /** A trace of its own (a span per page), named by the run id. */
  private execute(target: Target, scanFrom: Date | null): Promise<void> {
    const attributes = { 'pozy_sync.run.id': target.runId, 'pozy_sync.run.kind': 'backfill', workspaceId: target.workspaceId };
    return this.tracing.span('backfill run', { root: true, attributes }, (span) => this.executeRun(target, scanFrom, span));
  }

  private async executeRun(target: Target, scanFrom: Date | null, span: Span): Promise<void> {
    const { runId } = target;
    const progress: Progress = { newestLogAt: null, rowsScanned: 0, eventsRecovered: 0, eventsSkipped: 0, narrowedTypes: [] };
    const seen = new Set<string>();
    try {
      try {
        await this.scan(target, scanFrom, undefined, progress, seen);
      } catch (error) {
        if (!(error instanceof WindowTooDeepError)) throw error;
        // More rows since the checkpoint than Pozy pages through: read each event type on its own.
        this.logger.warn(`Backfill ${runId}: more than ${MAX_SKIP} log rows in the window; reading by event type`);
        for (const type of EVENT_TYPES) {
          progress.narrowedTypes.push(type);
          await this.scan(target, scanFrom, type, progress, seen);
        }
      }
      await this.runs.progress(runId, progress);
      await this.runs.finish(runId, 'succeeded', null);
      this.runsFinished.inc({ status: 'succeeded' });
      if (progress.eventsRecovered > 0) this.logger.warn(`Backfill ${runId} recovered ${progress.eventsRecovered} events Pozy never delivered`);
    } catch (error) {
      const message = error instanceof WindowTooDeepError ? error.message : `${(error as Error).name}: ${(error as Error).message}`;
      this.logger.error(`Backfill ${runId} failed: ${message}`);
      span.setStatus({ code: SpanStatusCode.ERROR, message });
      await this.runs.progress(runId, progress).catch(() => undefined);
      await this.runs.finish(runId, 'failed', message).catch(() => undefined);
      this.runsFinished.inc({ status: 'failed' });
      // Its checkpoint did not move: a new run once the database is back reads the same window again.
      if (isDatabaseUnavailable(error)) this.interrupted.set(target.workspaceId, { runId, trigger: target.trigger, message });
    } finally {
      // Recovered events are stored as they are found, so a failed run's count too.
      span.setAttributes({
        'pozy_sync.backfill.rows_scanned': progress.rowsScanned,
        'pozy_sync.backfill.events_recovered': progress.eventsRecovered,
        'pozy_sync.backfill.events_skipped': progress.eventsSkipped,
      });
      this.recovered.inc(progress.eventsRecovered);
      this.skipped.inc(progress.eventsSkipped);
    }
  }

  /** Pages newest first until a row older than `scanFrom`, the end of the logs, or Pozy's paging limit. */
  private async scan(target: Target, scanFrom: Date | null, event: string | undefined, progress: Progress, seen: Set<string>): Promise<void> {
    const { runId } = target;
    for (let skip = 0; ; skip += PAGE_SIZE) {
      if (skip > MAX_SKIP) {
        throw new WindowTooDeepError(
          `more than ${MAX_SKIP} log rows${event ? ` of type ${event}` : ''} since ${scanFrom?.toISOString() ?? 'the start of the logs'}: ` +
            'rows older than that were not read (run the full sweep)',
        );
      }
      const attributes = { 'pozy_sync.run.id': runId, 'pozy_sync.page.skip': skip, ...(event ? { 'pozy.event.type': event } : {}) };
      const last = await this.tracing.span('backfill page', { attributes }, async (span) => {
        const page = await target.pozy.listWebhookLogs({ limit: PAGE_SIZE, skip, event });
        const inWindow = page.logs.filter((row) => !scanFrom || new Date(row.createdAt) >= scanFrom);
        const newest = page.logs[0] ? new Date(page.logs[0].createdAt) : null;
        if (newest && (!progress.newestLogAt || newest > progress.newestLogAt)) progress.newestLogAt = newest;
        progress.rowsScanned += inWindow.length;
        const recoveredBefore = progress.eventsRecovered;
        await this.recover(target, inWindow, seen, progress);
        await this.runs.progress(runId, progress);
        span.setAttributes({ 'pozy_sync.page.rows': inWindow.length, 'pozy_sync.page.recovered': progress.eventsRecovered - recoveredBefore });
        return inWindow.length < page.logs.length || !page.hasMore || page.logs.length === 0;
      });
      if (last) return;
    }
  }

  /**
   * Stores the logged events we never received, counting the new ones and the ones skipped. Only a refusal of the
   * event itself (malformed, data PostgreSQL refuses, or too old to keep) is skipped, since no later run could store
   * it; any other failure (the receiver overloaded, the database) fails the run once the page's other events are
   * settled, and the checkpoint stays where it was, so the next run reads this window again.
   */
  private async recover(target: Target, rows: PozyWebhookLogDto[], seen: Set<string>, progress: Progress): Promise<void> {
    const { runId, workspaceId } = target;
    const fresh = new Map<string, PozyWebhookLogDto>();
    for (const row of rows) if (!seen.has(row.eventId) && !fresh.has(row.eventId)) fresh.set(row.eventId, row);
    for (const id of fresh.keys()) seen.add(id);
    if (fresh.size === 0) return;
    const missing = [...(await this.runs.missing(workspaceId, [...fresh.keys()]))];
    const settled = await Promise.allSettled(
      missing.map((id) => {
        const row = fresh.get(id)!;
        return this.receiver.receiveRecovered(workspaceId, row.requestPayload, runId, row.attemptNumber ?? null);
      }),
    );
    let failure: Error | undefined;
    settled.forEach((result, i) => {
      if (result.status === 'rejected') {
        const cause = result.reason as Error;
        failure ??= new Error(`logged event ${missing[i]} was not stored (${cause.name}: ${cause.message})`, { cause });
      } else if (result.value.outcome === 'stored') {
        progress.eventsRecovered += 1;
      } else if (result.value.outcome === 'refused') {
        progress.eventsSkipped += 1;
        this.logger.warn(`Backfill ${runId}: skipped logged event ${missing[i]}: ${result.value.reason}`);
      }
    });
    if (failure !== undefined) throw failure;
  }
}
