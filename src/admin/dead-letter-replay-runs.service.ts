import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { BeforeApplicationShutdown, Injectable, Logger } from '@nestjs/common';
import { ApiError } from '../common/api-error';
import { AppConfig } from '../config/app-config';
import { HeldLock, LockKey, tryAdvisoryLock } from '../database/advisory-lock';
import { DatabaseService } from '../database/database.service';
import { DeadLetterReplayRunRepository, ReplayProgress, ReplayQueue, ReplayRun } from '../dead-letters/dead-letter-replay-run.repository';
import { DeadLetter, DeadLetterRepository } from '../dead-letters/dead-letter.repository';
import { AckSpool, DeadPosition, withDeadline } from '../receive/ack-spool';
import { DeadLetterReplayService } from './dead-letter-replay.service';

/** Delivery letters per batch: small rows, replayed one after another. */
const DELIVERY_BATCH = 200;
/** Acknowledgment letters per batch, and their events' bytes together at most (an event can be up to 1 MiB). */
const ACK_BATCH = 200;
const ACK_BATCH_BYTES = 4 * 1024 * 1024;
/** How often a running run says it is alive (see REPLAY_HEARTBEAT_STALE_MS). */
const HEARTBEAT_MS = 5_000;
/** How long recording a run's end may take. */
const FINISH_TIMEOUT_MS = 10_000;

export type ReplayStart = { started: true; run: ReplayRun } | { started: false; runningRunId: string | null };

/** Asked to stop: the service is shutting down. */
class Stopped extends Error {}

interface Current {
  /** Null for a moment, while the run is being recorded. */
  runId: string | null;
  /** Set once the run's last status is written; its lock is being let go. */
  ended: boolean;
  done: Promise<void>;
}

/**
 * Bulk replays of a dead-letter queue, as runs in the background: `POST /admin/dead-letters/replay` answers the run's
 * id at once, and `GET /admin/dead-letters/replay/:runId` follows it. One run per queue at a time: the delivery queue
 * under an advisory lock across every replica, the ack queue per replica (its letters are in this replica's spool).
 * Letters are read in batches by keyset and replayed one after another; a letter counts as replayed only once its
 * replay is done, so a run cut short (shutdown, a killed process, a failure) loses none: the next run takes the rest.
 */
@Injectable()
export class DeadLetterReplayRuns implements BeforeApplicationShutdown {
  private readonly logger = new Logger(DeadLetterReplayRuns.name);
  private readonly host = hostname();
  private readonly current = new Map<ReplayQueue, Current>();
  private stopping = false;
  private readonly heartbeat: NodeJS.Timeout;

  constructor(
    private readonly runs: DeadLetterReplayRunRepository,
    private readonly deadLetters: DeadLetterRepository,
    private readonly spool: AckSpool,
    private readonly replays: DeadLetterReplayService,
    private readonly database: DatabaseService,
    private readonly config: AppConfig,
  ) {
    this.heartbeat = setInterval(() => void this.beat(), HEARTBEAT_MS);
    this.heartbeat.unref();
  }

  /** A run stops after the letter it is replaying, and is recorded `interrupted`: what it had not reached waits. */
  async beforeApplicationShutdown(): Promise<void> {
    this.stopping = true;
    clearInterval(this.heartbeat);
    await Promise.all([...this.current.values()].map((c) => c.done));
  }

  /** Starts a run of the queue unless one is under way; resolves once it is recorded, with how many letters it takes. */
  async start(queue: ReplayQueue): Promise<ReplayStart> {
    for (;;) {
      if (this.stopping) throw new ApiError('shutting_down', 'This replica is shutting down; retry (another replica will answer)');
      const here = this.current.get(queue);
      if (!here) break;
      if (!here.ended) return { started: false, runningRunId: here.runId };
      await here.done;
    }
    // Taken before the first await, so that a second request meanwhile finds it.
    const starting: Current = { runId: null, ended: false, done: Promise.resolve() };
    this.current.set(queue, starting);
    try {
      return await (queue === 'ack' ? this.startAck() : this.startDelivery());
    } finally {
      if (this.current.get(queue) === starting) this.current.delete(queue);
    }
  }

  private async startDelivery(): Promise<ReplayStart> {
    const lock = await this.lockDelivery();
    if (!('release' in lock)) return lock;
    try {
      await this.runs.interruptLeftovers('delivery', null);
      const run = await this.runs.create({ id: randomUUID(), queue: 'delivery', host: this.host, spoolId: null });
      const total = await this.deadLetters.countUnreplayed(run.startedAt);
      await this.runs.setTotal(run.id, total);
      this.launch({ ...run, total }, run.startedAt.getTime(), lock);
      return { started: true, run: { ...run, total } };
    } catch (error) {
      await lock.release();
      throw error;
    }
  }

  /**
   * The delivery queue's lock, or the run that holds it. A run that has just ended on another replica may hold it
   * a moment longer (its status is written first): that is waited for, not refused.
   */
  private async lockDelivery(): Promise<HeldLock | { started: false; runningRunId: string | null }> {
    for (let attempt = 0; ; attempt += 1) {
      const lock = await tryAdvisoryLock(this.database.db, LockKey.DeadLetterReplay);
      if (lock) return lock;
      const running = await this.runs.running('delivery', null);
      if (running || attempt >= 40) return { started: false, runningRunId: running?.id ?? null };
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /**
   * The ack queue is this replica's spool; its run record is in PostgreSQL, like the events it inserts, so any
   * replica answers the GET. While the database does not answer, neither can the replay: 503, as for one letter.
   */
  private async startAck(): Promise<ReplayStart> {
    // The spool's clock (dead_at is this process's), not the database's.
    const upTo = Date.now();
    const total = this.spool.countDead(upTo);
    let run: ReplayRun;
    try {
      run = await withDeadline(
        (async () => {
          await this.runs.interruptLeftovers('ack', this.spool.spoolId);
          const created = await this.runs.create({ id: randomUUID(), queue: 'ack', host: this.host, spoolId: this.spool.spoolId });
          await this.runs.setTotal(created.id, total);
          return { ...created, total };
        })(),
        this.config.ackTimeoutMs,
      );
    } catch (error) {
      throw new ApiError('database_unavailable', `The database does not answer: ${(error as Error).message}`);
    }
    this.launch(run, upTo, null);
    return { started: true, run };
  }

  /** `upTo`: the newest letters the run takes (ms), by the clock their queue is dated with. */
  private launch(run: ReplayRun, upTo: number, lock: HeldLock | null): void {
    const current: Current = { runId: run.id, ended: false, done: Promise.resolve() };
    current.done = this.execute(run, upTo, current).finally(async () => {
      if (this.current.get(run.queue) === current) this.current.delete(run.queue);
      await lock?.release();
    });
    this.current.set(run.queue, current);
  }

  private async execute(run: ReplayRun, upTo: number, current: Current): Promise<void> {
    const progress: ReplayProgress = { replayed: 0, skipped: 0, batches: 0 };
    let status: 'succeeded' | 'failed' | 'interrupted' = 'succeeded';
    let error: string | null = null;
    try {
      if (run.queue === 'delivery') await this.replayDelivery(run, new Date(upTo), progress);
      else await this.replayAck(run, upTo, progress);
    } catch (e) {
      status = e instanceof Stopped ? 'interrupted' : 'failed';
      error =
        e instanceof Stopped
          ? 'this replica shut down before the run finished; the letters it had not replayed are still waiting'
          : `${(e as Error).name}: ${(e as Error).message}`;
      if (status === 'failed') this.logger.error(`Replay ${run.id} of the ${run.queue} dead-letter queue failed: ${error}`);
    }
    try {
      // Bounded: a database gone quiet must not hold the shutdown up; the heartbeat then stops, and tells.
      await withDeadline(this.runs.finish(run.id, status, progress, error), FINISH_TIMEOUT_MS);
    } catch (e) {
      this.logger.error(`Replay ${run.id}: could not record its end (${status}): ${(e as Error).message}`);
    }
    current.ended = true;
    this.logger.log(`Replay ${run.id} of the ${run.queue} dead-letter queue ${status}: ${progress.replayed} replayed, ${progress.skipped} skipped`);
  }

  private async replayDelivery(run: ReplayRun, upTo: Date, progress: ReplayProgress): Promise<void> {
    let after: Pick<DeadLetter, 'createdAt' | 'id'> | null = null;
    for (;;) {
      this.checkStopping();
      const batch = await this.deadLetters.unreplayedPage(after, upTo, DELIVERY_BATCH);
      if (batch.length === 0) return;
      for (const letter of batch) {
        this.checkStopping(progress, run);
        const result = await this.replays.replayLetter(letter);
        if (result.outcome === 'replayed') progress.replayed += 1;
        else {
          progress.skipped += 1;
          this.logger.warn(`Replay ${run.id}: dead letter ${letter.id} (${letter.resourceKey}) skipped: ${result.reason}`);
        }
      }
      after = batch[batch.length - 1];
      progress.batches += 1;
      await this.runs.progress(run.id, progress);
    }
  }

  private async replayAck(run: ReplayRun, upTo: number, progress: ReplayProgress): Promise<void> {
    let after: DeadPosition | null = null;
    for (;;) {
      this.checkStopping();
      const batch = this.spool.deadPage(after, upTo, ACK_BATCH, ACK_BATCH_BYTES);
      if (batch.length === 0) return;
      const { replayed, skipped } = await this.replays.replayAckLetters(batch.map((letter) => letter.id));
      progress.replayed += replayed;
      progress.skipped += skipped.length;
      for (const letter of skipped) this.logger.warn(`Replay ${run.id}: ack letter ${letter.id} skipped: ${letter.reason}`);
      after = batch[batch.length - 1];
      progress.batches += 1;
      await this.runs.progress(run.id, progress);
    }
  }

  /** Between letters: stops the run when the service shuts down (what it replayed so far is counted). */
  private checkStopping(progress?: ReplayProgress, run?: ReplayRun): void {
    if (!this.stopping) return;
    if (progress && run) this.logger.warn(`Replay ${run.id} stops: this replica is shutting down (${progress.replayed} replayed so far)`);
    throw new Stopped();
  }

  private async beat(): Promise<void> {
    const ids = [...this.current.values()].flatMap((c) => (c.ended || c.runId === null ? [] : [c.runId]));
    await this.runs.heartbeat(ids).catch((error: unknown) => this.logger.warn(`Replay heartbeat failed: ${(error as Error).message}`));
  }
}
