import { Logger, OnApplicationShutdown } from '@nestjs/common';
import type { Dispatcher } from 'undici';
import { ApiError } from '../../common/api-error';
import {
  BudgetSettings,
  decide,
  Decision,
  effectiveLimit,
  Lane,
  LANES,
  lateAfterMs,
  Observation,
  cappedPause,
  pauseFor,
  recount,
  resume,
  TakeRequest,
  usedInWindow,
} from './budget-policy';
import { headerText, integerHeader, quoted, rateLimitResetAt } from '../rate-limit-headers';
import { BudgetRepository } from './budget.repository';

/** A request the budget let through: hand it back to `answered` once Pozy answered (or it failed). */
export interface Grant {
  /** When it was granted, on the shared (database) clock. */
  at: number;
  /** The same moment on this process's clock. */
  localAt: number;
}

/**
 * A job's read (the realtime and operator lanes) waits out a pause of the key this long at most in its worker's
 * place: past it, the take fails with KeyPausedError and the job ends, its read due again when the pause ends, so that
 * one key's 429s never hold the places other workspaces' reads need. Runs (backfill, bulk) wait, as before.
 */
export const MAX_PAUSE_WAITED_IN_JOB_MS = 2_000;
const JOB_LANES: readonly number[] = [LANES.indexOf('realtime'), LANES.indexOf('operator')];

/** The key is paused for `pausedForMs` more, longer than a job's read waits (MAX_PAUSE_WAITED_IN_JOB_MS). */
export class KeyPausedError extends Error {
  constructor(readonly pausedForMs: number) {
    super(`The Pozy key is paused for ${Math.ceil(pausedForMs / 1000)} s more (429s)`);
    this.name = 'KeyPausedError';
  }
}

interface Waiter {
  lane: number;
  since: number;
  resolve(grant: Grant): void;
  reject(error: Error): void;
}

/** What the newest answer's headers said, dated on this process's clock. */
interface LocalObservation {
  limit: number;
  remaining: number;
  resetAtMs: number | undefined;
  receivedAt: number;
  /** On the shared clock already. */
  grantedAt: number;
}

/**
 * Past this many tokens a take (budgets far above Pozy's plans: a few thousand a minute and more), a replica takes
 * tokens ahead of its callers and hands them out for a moment, so that a burst of reads does not queue on the
 * database. At Pozy's own budgets it takes exactly what waits, and the lanes hold strictly across replicas.
 */
const LEASE_AHEAD_FROM_BATCH = 3;
/** How long tokens taken ahead stay usable; those left unused are spent budget. */
const LEASE_MS = 250;
/** A take that lost the race to another replica's is read and decided again, this many times at most. */
const MAX_CONFLICTS = 20;
/** A waiter sleeping on a long pause still looks again this often (a pause can be lifted, a lane can empty). */
const MAX_SLEEP_MS = 1_000;

/** The budget as it stands, for the status endpoint, page and metrics. */
export interface BudgetStatus {
  /** POZY_RATE_LIMIT_PER_MINUTE over `windowMs`, or the smallest limit a workspace using the key was given. */
  limit: number;
  windowMs: number;
  /** What the deployment may use per window now: its own limit, less what others use of Pozy's and their reserve. */
  effectiveLimit: number;
  /** Requests every replica together made in the window just ended (counted a little beyond it, to be safe). */
  usedInWindow: number;
  /** Until when a 429 paused every replica (never further ahead than POZY_MAX_PAUSE_MS); null when not paused. */
  pausedUntil: Date | null;
  /** What Pozy's headers said last, within the window: its limit for the key, and how much others used of it. */
  pozy: { limit: number; othersUsing: number; observedAt: Date } | null;
  /** Lanes known to be waiting for a request now. */
  waiting: Lane[];
}

export interface BudgetOptions {
  /** False: one line in arrival order, whatever the lane (the baseline the bench compares the lanes with). */
  lanes: boolean;
  /** Named in the log lines of a key other than the environment's (its key id, never the key). */
  name?: string;
  /** Told how long each granted caller waited, and of each pause. */
  waited?(lane: Lane, ms: number): void;
  paused?(): void;
  /**
   * Told once per storm of 429s, as the first pause of it begins: a pause that begins within STORM_GAP_MS of the
   * last one's end continues the storm. `at` is the shared budget's clock, the same on every replica.
   */
  stormBegan?(storm: { keyId: string; at: number; pausedForMs: number; why: string }): void;
}

/** Pauses this close to each other are one storm of 429s: told of once. */
export const STORM_GAP_MS = 60_000;

/**
 * This process's side of one Pozy API key's budget (the deployment's for that key, whatever the workspaces using
 * it): callers wait here, highest lane first, and one loop takes tokens for them from the key's shared state in
 * PostgreSQL (budget-policy.ts has the rules), several at a time when many wait and the budget is large.
 */
export class PozyBudget implements OnApplicationShutdown {
  private readonly logger = new Logger(PozyBudget.name);
  private readonly queues: Waiter[][] = LANES.map(() => []);
  private settings: BudgetSettings;
  private maxBatch: number;
  private pumping = false;
  private closed = false;
  private wake: (() => void) | undefined;
  private sleepingFor: number | undefined;
  private observation: LocalObservation | undefined;
  /** Tokens taken ahead, when they were granted, and until when they may be used. */
  private spare = 0;
  private spareGrant: Grant = { at: 0, localAt: 0 };
  private spareUntil = 0;
  /** Until when this process last saw the key paused (its own 429, or the shared state): a hint, checked before it is used. */
  private pauseSeen = { until: 0 };
  /** When a Reset header this replica could not use, or had to cap, was last logged: once a window at most. */
  private resetWarnedAt = 0;

  constructor(
    private readonly repository: BudgetRepository,
    /** The key's row (budget-key.ts). */
    readonly keyId: string,
    settings: BudgetSettings,
    private readonly options: BudgetOptions = { lanes: true },
  ) {
    this.settings = settings;
    this.maxBatch = batchFor(settings);
  }

  get perWindow(): number {
    return this.settings.perWindow;
  }

  /**
   * This process's limit for the key from the next take on (workspaces sharing a key may be given different
   * figures: the smallest is set here). Each replica grants up to the limit it knows, counted in the shared
   * window: the replicas must be told the same figures (the workspace registry's), or the largest one told holds.
   */
  setPerWindow(perWindow: number): void {
    if (!Number.isInteger(perWindow) || perWindow < 1) throw new RangeError(`A budget's limit must be a positive integer, not ${perWindow}`);
    if (perWindow === this.settings.perWindow) return;
    this.settings = { ...this.settings, perWindow };
    this.maxBatch = batchFor(this.settings);
  }

  /** Last, like the client: jobs finishing during the shutdown's grace still take from the budget. */
  onApplicationShutdown(): void {
    this.closed = true;
    this.wake?.();
    for (const queue of this.queues) for (const waiter of queue.splice(0)) waiter.reject(new Error('The service is stopping'));
  }

  /** Resolves when the caller may send one request to Pozy; hand the grant to `answered` when it is done. */
  take(lane: Lane): Promise<Grant> {
    if (this.closed) return Promise.reject(new Error('The service is stopping'));
    if (this.spare > 0 && Date.now() < this.spareUntil) {
      this.spare -= 1;
      this.options.waited?.(lane, 0);
      return Promise.resolve(this.spareGrant);
    }
    // A job's read while this process last saw the key paused for long: the shared state says whether it still is.
    if (JOB_LANES.includes(LANES.indexOf(lane)) && this.pauseSeen.until - Date.now() > MAX_PAUSE_WAITED_IN_JOB_MS) return this.takeUnlessPaused(lane);
    return this.enqueue(lane);
  }

  /** One read of the shared row (no write): refused while the pause lasts long, else in line as usual. */
  private async takeUnlessPaused(lane: Lane): Promise<Grant> {
    const { state, now } = await this.repository.read(this.keyId);
    const pausedFor = cappedPause(state, now, this.settings) - now;
    if (pausedFor > MAX_PAUSE_WAITED_IN_JOB_MS) {
      this.pauseSeen = { until: Date.now() + pausedFor };
      throw new KeyPausedError(pausedFor);
    }
    this.pauseSeen = { until: 0 };
    return this.enqueue(lane);
  }

  private enqueue(lane: Lane): Promise<Grant> {
    const index = this.options.lanes ? LANES.indexOf(lane) : 0;
    return new Promise<Grant>((resolve, reject) => {
      const started = Date.now();
      this.queues[index].push({
        lane: index,
        since: started,
        resolve: (grant) => {
          this.options.waited?.(lane, Date.now() - started);
          resolve(grant);
        },
        reject,
      });
      // A waiter above the one being asked for must be asked for instead, at once.
      if (this.sleepingFor !== undefined && index < this.sleepingFor) this.wake?.();
      if (!this.pumping) void this.pump();
    });
  }

  /** Reads the `X-RateLimit-*` headers of the answer to the request of `grant`: the next take tells the shared state. */
  observe(headers: Dispatcher.ResponseData['headers'], grant: Grant): void {
    const limit = integerHeader(headers['x-ratelimit-limit']);
    const remaining = integerHeader(headers['x-ratelimit-remaining']);
    if (limit === undefined || remaining === undefined || limit <= 0) return;
    const receivedAt = Date.now();
    const resetAtMs = rateLimitResetAt(headers['x-ratelimit-reset']);
    if (remaining <= 0) this.warnOfReset(headerText(headers['x-ratelimit-reset']), resetAtMs, receivedAt);
    this.observation = { limit, remaining, resetAtMs, receivedAt, grantedAt: grant.at };
  }

  /** Headers saying the window is spent pause everyone until the reset: one that cannot be read, or is too far, is said. */
  private warnOfReset(sent: string | undefined, resetAtMs: number | undefined, now: number): void {
    if (sent === undefined || now - this.resetWarnedAt < this.settings.windowMs) return;
    let problem: string | undefined;
    if (resetAtMs === undefined) problem = 'is not a Unix time in seconds: no pause is taken from it';
    else if (resetAtMs - now > this.settings.maxPauseMs)
      problem = `is ${Math.ceil((resetAtMs - now) / 1000)} s away: a pause it causes lasts ${this.settings.maxPauseMs} ms (POZY_MAX_PAUSE_MS)`;
    if (!problem) return;
    this.resetWarnedAt = now;
    this.logger.warn(`Pozy says its window is spent, and its X-RateLimit-Reset ${quoted(sent)} ${problem}${this.named()}`);
  }

  async status(): Promise<BudgetStatus> {
    const { state, now } = await this.repository.read(this.keyId);
    const remote = state.remote && now - state.remote.at < this.settings.windowMs ? state.remote : null;
    return {
      limit: this.settings.perWindow,
      windowMs: this.settings.windowMs,
      effectiveLimit: effectiveLimit(state, now, this.settings),
      usedInWindow: usedInWindow(state, now, this.settings),
      pausedUntil: cappedPause(state, now, this.settings) > now ? new Date(cappedPause(state, now, this.settings)) : null,
      pozy: remote && { limit: remote.limit, othersUsing: remote.others, observedAt: new Date(remote.at) },
      waiting: LANES.filter((_, i) => state.demandUntil[i] > now),
    };
  }

  /**
   * The request of `grant` is over. One answered late may have reached Pozy later than its grant's slot counts for:
   * it is counted from its answer instead, so that no replica spends its place in Pozy's window twice.
   */
  async answered(grant: Grant): Promise<void> {
    const elapsed = Date.now() - grant.localAt;
    if (elapsed <= lateAfterMs(this.settings)) return;
    try {
      for (let conflict = 0; conflict < MAX_CONFLICTS; conflict += 1) {
        const stored = await this.repository.read(this.keyId);
        const state = recount(stored.state, grant.at, Math.min(stored.now, grant.at + elapsed), this.settings);
        if (await this.repository.write(this.keyId, state, stored.version)) return;
      }
    } catch (error) {
      // The answer is in hand; a Pozy that counts the request later than we do answers 429, which pauses everyone.
      this.logger.warn(`Counting a late answer against the Pozy budget failed: ${(error as Error).message}`);
    }
  }

  /**
   * Pozy answered 429: every replica waits `ms` (at most POZY_MAX_PAUSE_MS) before its next request. `why`: what the
   * wait came from, and how it was adjusted, for the one log line that says so.
   */
  async pause(ms: number, why: string): Promise<void> {
    for (let conflict = 0; conflict < MAX_CONFLICTS; conflict += 1) {
      const stored = await this.repository.read(this.keyId);
      const lastPauseEnds = cappedPause(stored.state, stored.now, this.settings);
      if (await this.repository.write(this.keyId, pauseFor(stored.state, ms, stored.now, this.settings), stored.version)) {
        const pausedFor = Math.min(ms, this.settings.maxPauseMs);
        // The write compared versions: of replicas pausing at once, one starts the storm, the others see it begun.
        if (lastPauseEnds + STORM_GAP_MS < stored.now) this.options.stormBegan?.({ keyId: this.keyId, at: stored.now, pausedForMs: pausedFor, why });
        this.pauseSeen = { until: Date.now() + pausedFor };
        if (pausedFor > MAX_PAUSE_WAITED_IN_JOB_MS) this.releaseJobWaiters(pausedFor);
        this.options.paused?.();
        this.logger.warn(
          `Pozy answered 429 (${why}): every replica pauses its requests for ${Math.ceil(Math.min(ms, this.settings.maxPauseMs) / 1000)} s${this.named()}`,
        );
        return;
      }
    }
  }

  /**
   * An operator lifts the pause, for every replica: each takes again at its next look (within a second); this one's
   * waiters at once. Answers the pause lifted (null: there was none) and the budget now.
   */
  async resume(): Promise<{ lifted: Date | null; status: BudgetStatus }> {
    for (let conflict = 0; ; conflict += 1) {
      const stored = await this.repository.read(this.keyId);
      const until = cappedPause(stored.state, stored.now, this.settings);
      if (await this.repository.write(this.keyId, resume(stored.state), stored.version)) {
        this.pauseSeen = { until: 0 };
        this.wake?.();
        if (until > stored.now)
          this.logger.warn(`An operator lifted the pause of the Pozy budget (it lasted until ${new Date(until).toISOString()})${this.named()}`);
        return { lifted: until > stored.now ? new Date(until) : null, status: await this.status() };
      }
      // Every replica writing the row at once: the operator may simply ask again.
      if (conflict >= MAX_CONFLICTS) {
        throw new ApiError('budget_contended', `The shared Pozy budget was written by others ${MAX_CONFLICTS} times in a row; retry`, undefined, 1);
      }
    }
  }

  /** Which key a log line is about, when it is not the environment's. */
  private named(): string {
    return this.options.name === undefined ? '' : ` (API key ${this.options.name})`;
  }

  private head(): Waiter | undefined {
    for (const queue of this.queues) if (queue.length > 0) return queue[0];
    return undefined;
  }

  private waiting(): number {
    return this.queues.reduce((sum, queue) => sum + queue.length, 0);
  }

  private async pump(): Promise<void> {
    this.pumping = true;
    try {
      for (let head = this.head(); head && !this.closed; head = this.head()) {
        let decision: Decision;
        let grant: Grant;
        const want = this.maxBatch >= LEASE_AHEAD_FROM_BATCH ? this.maxBatch : Math.min(this.waiting(), this.maxBatch);
        try {
          ({ decision, grant } = await this.takeShared({ lane: LANES[head.lane], want, waitedMs: Date.now() - head.since }));
        } catch (error) {
          // Without the database there is no budget: these callers fail (their jobs retry), later ones try again.
          for (const queue of this.queues) for (const waiter of queue.splice(0)) waiter.reject(error as Error);
          this.logger.warn(`Taking from the Pozy budget failed: ${(error as Error).message}`);
          break;
        }
        if (decision.granted > 0) this.pauseSeen = { until: 0 };
        else if (decision.reason === 'paused') {
          this.pauseSeen = { until: Date.now() + decision.waitMs };
          if (decision.waitMs > MAX_PAUSE_WAITED_IN_JOB_MS) this.releaseJobWaiters(decision.waitMs);
        }
        let left = decision.granted;
        for (let waiter = left > 0 ? this.next() : undefined; waiter; waiter = left > 0 ? this.next() : undefined) {
          waiter.resolve(grant);
          left -= 1;
        }
        if (left > 0) {
          this.spare = left;
          this.spareGrant = grant;
          this.spareUntil = Date.now() + LEASE_MS;
        }
        if (decision.granted === 0) await this.sleep(head.lane, Math.min(decision.waitMs, MAX_SLEEP_MS));
      }
    } finally {
      this.pumping = false;
    }
  }

  /** The jobs' reads waiting for a take give their workers' places back: their reads are due again after the pause. */
  private releaseJobWaiters(pausedForMs: number): void {
    for (const lane of JOB_LANES) for (const waiter of this.queues[lane].splice(0)) waiter.reject(new KeyPausedError(pausedForMs));
  }

  private next(): Waiter | undefined {
    for (const queue of this.queues) if (queue.length > 0) return queue.shift();
    return undefined;
  }

  private sleep(lane: number, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wake = undefined;
        this.sleepingFor = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms).unref();
      this.sleepingFor = lane;
      this.wake = done;
    });
  }

  /** One decision against the shared state, read and written again if another replica wrote it meanwhile. */
  private async takeShared(request: Omit<TakeRequest, 'observation'>): Promise<{ decision: Decision; grant: Grant }> {
    for (let conflict = 0; ; conflict += 1) {
      const stored = await this.repository.read(this.keyId);
      const told = this.observation;
      const observation = told && toSharedClock(told, stored.now);
      const decision = decide(stored.state, { ...request, observation }, stored.now, this.settings);
      if (await this.repository.write(this.keyId, decision.state, stored.version)) {
        // Told once; a newer answer that came meanwhile is told next time.
        if (this.observation === told) this.observation = undefined;
        return { decision, grant: { at: stored.now, localAt: Date.now() } };
      }
      if (conflict >= MAX_CONFLICTS) throw new Error(`the shared Pozy budget was contended ${MAX_CONFLICTS} times in a row`);
    }
  }
}

/** A tenth of a second's worth per take: one at a time at Pozy's usual budgets, fewer round trips at large ones. */
function batchFor(settings: BudgetSettings): number {
  return Math.min(20, Math.max(1, Math.floor((settings.perWindow * 100) / settings.windowMs)));
}

/** The observation on the shared clock: as old there as it is here. */
function toSharedClock(local: LocalObservation, sharedNow: number): Observation {
  const localNow = Date.now();
  return {
    limit: local.limit,
    remaining: local.remaining,
    at: sharedNow - (localNow - local.receivedAt),
    resetAt: local.resetAtMs === undefined ? undefined : sharedNow + (local.resetAtMs - localNow),
    grantedAt: local.grantedAt,
  };
}
