/**
 * Delivers the world's events to the subscription's URL the way Pozy does (docs/pozy-api.md: its API reference, and
 * its guide where they differ): the envelope serialized once and stored, so every retry and redelivery sends the
 * same bytes; the X-Pozy-* headers; 2xx within 5 s is success; anything else climbs the 7-attempt ladder, then
 * dead-letters. Every attempt is a log row, as `GET /v1/webhooks/logs` shows them.
 */
import { performance } from 'node:perf_hooks';
import { Agent, request } from 'undici';
import { signPozyPayload } from '../src/webhooks/webhook-signature';
import { FaultConfig, Rng } from './faults';
import type { PozyEvent } from './world/pozy-shapes';

/** Seconds before attempts 1..7, each counted from the end of the previous attempt (≈ 33 h in all). */
export const RETRY_LADDER_S: readonly number[] = [0, 10, 100, 1_000, 10_000, 8 * 3_600, 22 * 3_600];
export const MAX_ATTEMPTS = RETRY_LADDER_S.length;
export const DELIVERY_TIMEOUT_MS = 5_000;
/** Pozy keeps at most this much of an endpoint's reply in the log (older docs: 10 KB). */
const RESPONSE_BODY_LIMIT = 10 * 1024;

export interface WebhookLogRow {
  _id: string;
  userId: string;
  webhookId: string;
  webhookName: string;
  eventId: string;
  event: string;
  url: string;
  status: 'success' | 'failed';
  statusCode: number;
  requestPayload: unknown;
  responseBody?: string;
  errorMessage?: string;
  attemptNumber: number;
  responseTime: number;
  createdAt: string;
}

export interface LogQuery {
  limit: number;
  skip: number;
  status?: 'success' | 'failed';
  event?: string;
  eventId?: string;
  webhookId?: string;
}

export interface SenderStats {
  /** Events handed to the sender (including those emitted while no URL was set). */
  eventsEmitted: number;
  /** Events emitted while no URL was set: nothing to deliver to, so neither sent nor logged. */
  eventsSkipped: number;
  /** HTTP attempts made (retries, duplicates, redeliveries and tests included). */
  attempts: number;
  successes: number;
  failures: number;
  drops: number;
  duplicates: number;
  deadLettered: number;
  redeliveries: number;
  tests: number;
  /** Events still being delivered: waiting, in flight or between retries. */
  pending: number;
}

export interface SenderOptions {
  userId: string;
  webhookId: string;
  webhookName: string;
  url?: string;
  secret?: string;
  /** Retry delays are divided by this (1 = real time). */
  timeScale?: number;
  /** Most HTTP attempts in flight at once. */
  concurrency?: number;
  timeoutMs?: number;
  /** Oldest log rows (and stored payloads) are forgotten past this many. */
  maxLogRows?: number;
  rng: Rng;
  faults: () => Readonly<FaultConfig>;
}

export type RedeliverResult =
  { outcome: 'success'; statusCode: number } | { outcome: 'failed'; statusCode: number; message: string } | { outcome: 'no_url' | 'not_found' };

interface StoredEvent {
  id: string;
  event: string;
  body: string;
}

interface LogRecord {
  id: string;
  stored: StoredEvent;
  url: string;
  ok: boolean;
  statusCode: number;
  responseBody?: string;
  errorMessage?: string;
  attemptNumber: number;
  responseTime: number;
  createdAt: number;
}

/** A counting semaphore whose waiters are released (with `false`) when it closes. */
class Slots {
  private free: number;
  private readonly waiters: ((granted: boolean) => void)[] = [];
  private closed = false;

  constructor(size: number) {
    this.free = size;
  }

  acquire(): Promise<boolean> {
    if (this.closed) return Promise.resolve(false);
    if (this.free > 0) {
      this.free -= 1;
      return Promise.resolve(true);
    }
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  release(): void {
    const next = this.waiters.shift();
    if (next) next(true);
    else this.free += 1;
  }

  close(): void {
    this.closed = true;
    for (const waiter of this.waiters.splice(0)) waiter(false);
  }
}

export class WebhookSender {
  private url: string | undefined;
  private readonly secret: string | undefined;
  private readonly timeScale: number;
  private readonly timeoutMs: number;
  private readonly maxLogRows: number;
  private readonly rng: Rng;
  private readonly agent: Agent;
  private readonly slots: Slots;
  private closed = false;
  private readonly sleepers = new Map<NodeJS.Timeout, () => void>();
  private readonly running = new Set<Promise<void>>();
  private readonly idleWaiters: (() => void)[] = [];
  private readonly events = new Map<string, StoredEvent>();
  private log: LogRecord[] = [];
  private pending = 0;
  private readonly counters: Omit<SenderStats, 'pending'> = {
    eventsEmitted: 0,
    eventsSkipped: 0,
    attempts: 0,
    successes: 0,
    failures: 0,
    drops: 0,
    duplicates: 0,
    deadLettered: 0,
    redeliveries: 0,
    tests: 0,
  };

  constructor(private readonly options: SenderOptions) {
    this.url = options.url;
    this.secret = options.secret;
    this.timeScale = options.timeScale ?? 1;
    if (!(this.timeScale > 0)) throw new RangeError('timeScale must be > 0');
    this.timeoutMs = options.timeoutMs ?? DELIVERY_TIMEOUT_MS;
    this.maxLogRows = options.maxLogRows ?? 100_000;
    this.rng = options.rng;
    const concurrency = options.concurrency ?? 32;
    this.slots = new Slots(concurrency);
    this.agent = new Agent({ connections: concurrency });
  }

  get webhookUrl(): string | undefined {
    return this.url;
  }

  /** Later attempts (retries included) go to the new URL, as Pozy sends to the subscription's current URL. */
  setUrl(url: string | undefined): void {
    this.url = url;
  }

  /** Takes one event from the world; fault decisions are drawn now, in emission order, so a seed replays them. */
  enqueue(event: PozyEvent): void {
    this.counters.eventsEmitted += 1;
    if (this.url === undefined || this.closed) {
      this.counters.eventsSkipped += 1;
      return;
    }
    const stored = this.store(event);
    const faults = this.options.faults();
    const drop = this.rng.chance(faults.dropRate);
    const delayMs = faults.reorderMaxDelayMs > 0 ? this.rng.next() * faults.reorderMaxDelayMs : 0;
    const duplicate = this.rng.chance(faults.duplicateRate);
    this.track(async () => {
      if (drop) {
        this.counters.drops += 1;
        const errorMessage = 'Dropped (simulated fault: dropRate); never retried';
        this.record(stored, 1, { ok: false, statusCode: 0, errorMessage, responseTime: 0 }, false);
        return;
      }
      if (delayMs > 0 && !(await this.sleep(delayMs))) return;
      for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
        if (attempt > 1 && !(await this.sleep((RETRY_LADDER_S[attempt - 1] * 1000) / this.timeScale))) return;
        let ok: boolean;
        if (attempt === 1 && duplicate) {
          // Both copies at once: the receiver's dedupe has to hold under a race, not only in sequence.
          this.counters.duplicates += 1;
          [ok] = await Promise.all([this.attempt(stored, 1), this.attempt(stored, 1)]);
        } else {
          ok = await this.attempt(stored, attempt);
        }
        if (ok || this.closed) return;
      }
      this.counters.deadLettered += 1;
    });
  }

  /** One more attempt of a stored event, same bytes, to the current URL; logged as a new row (attempt 1). */
  async redeliver(eventId: string): Promise<RedeliverResult> {
    if (this.url === undefined) return { outcome: 'no_url' };
    const stored = this.events.get(eventId);
    if (!stored) return { outcome: 'not_found' };
    this.counters.redeliveries += 1;
    const row = await this.trackResult(() => this.attemptRow(stored, 1));
    return row.ok
      ? { outcome: 'success', statusCode: row.statusCode }
      : { outcome: 'failed', statusCode: row.statusCode, message: row.errorMessage ?? `Endpoint answered ${row.statusCode}` };
  }

  /** A `webhook.test` event with `test: true` and a fresh id: one synchronous attempt, no retries. */
  async sendTest(): Promise<{ ok: boolean; eventId?: string }> {
    if (this.url === undefined) return { ok: false };
    this.counters.tests += 1;
    const event: PozyEvent = {
      id: this.rng.uuid(),
      event: 'webhook.test',
      message: 'This is a test webhook from Pozy',
      timestamp: new Date().toISOString(),
      test: true,
    };
    const stored = this.store(event);
    const row = await this.trackResult(() => this.attemptRow(stored, 1));
    return { ok: row.ok, eventId: event.id };
  }

  /** Log rows, newest first, and how many match in all. */
  logs(query: LogQuery): { rows: WebhookLogRow[]; total: number } {
    if (query.webhookId !== undefined && query.webhookId !== this.options.webhookId) return { rows: [], total: 0 };
    const rows: WebhookLogRow[] = [];
    let total = 0;
    for (let i = this.log.length - 1; i >= 0; i--) {
      const record = this.log[i];
      if (query.status !== undefined && (query.status === 'success') !== record.ok) continue;
      if (query.event !== undefined && record.stored.event !== query.event) continue;
      if (query.eventId !== undefined && record.stored.id !== query.eventId) continue;
      if (total >= query.skip && rows.length < query.limit) rows.push(this.toRow(record));
      total += 1;
    }
    return { rows, total };
  }

  /** Resolves once nothing is waiting, in flight or scheduled for a retry. */
  idle(): Promise<void> {
    if (this.pending === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  stats(): SenderStats {
    return { ...this.counters, pending: this.pending };
  }

  /** Cancels every scheduled retry, aborts attempts in flight and closes the connections. */
  async close(): Promise<void> {
    this.closed = true;
    this.slots.close();
    for (const [timer, wake] of this.sleepers) {
      clearTimeout(timer);
      wake();
    }
    this.sleepers.clear();
    // Destroying the agent fails the attempts in flight at once; they see the sender closing and log nothing.
    await this.agent.destroy();
    await Promise.allSettled([...this.running]);
  }

  // ---- internals ----

  private store(event: PozyEvent): StoredEvent {
    const stored: StoredEvent = { id: event.id, event: event.event, body: JSON.stringify(event) };
    this.events.set(stored.id, stored);
    // Map keeps insertion order: the first key is the oldest.
    while (this.events.size > this.maxLogRows) this.events.delete(this.events.keys().next().value!);
    return stored;
  }

  /** Runs `work` as pending until it settles, so idle() and close() wait for it. */
  private track(work: () => Promise<void>): void {
    // Attempts catch their own errors; this only keeps a bug from becoming an unhandled rejection.
    this.trackResult(work).catch(() => undefined);
  }

  private trackResult<T>(work: () => Promise<T>): Promise<T> {
    this.pending += 1;
    const done = work().finally(() => {
      this.running.delete(settled);
      this.pending -= 1;
      if (this.pending === 0) for (const resolve of this.idleWaiters.splice(0)) resolve();
    });
    const settled = done.then(
      () => undefined,
      () => undefined,
    );
    this.running.add(settled);
    return done;
  }

  /** Resolves true after `ms`, or false at once if the sender closes meanwhile. */
  private sleep(ms: number): Promise<boolean> {
    if (this.closed) return Promise.resolve(false);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.sleepers.delete(timer);
        resolve(!this.closed);
      }, ms);
      this.sleepers.set(timer, () => resolve(false));
    });
  }

  private async attempt(stored: StoredEvent, attemptNumber: number): Promise<boolean> {
    return (await this.attemptRow(stored, attemptNumber)).ok;
  }

  /** One HTTP attempt within a concurrency slot; logged unless the sender closed meanwhile. */
  private async attemptRow(stored: StoredEvent, attemptNumber: number): Promise<LogRecord> {
    if (!(await this.slots.acquire())) return this.unsent(stored, attemptNumber);
    try {
      const url = this.url;
      if (url === undefined) return this.record(stored, attemptNumber, { ok: false, statusCode: 0, errorMessage: 'No webhook URL', responseTime: 0 });
      const headers: Record<string, string> = {
        'Content-Type': 'application/json',
        'User-Agent': 'Pozy-Webhooks/1.0',
        'X-Pozy-Event': stored.event,
        'X-Pozy-Event-Id': stored.id,
        'X-Pozy-Delivery-Id': this.rng.uuid(),
        'X-Pozy-Attempt': String(attemptNumber),
      };
      if (this.secret) headers['X-Pozy-Signature'] = signPozyPayload(this.secret, stored.body);
      const timeout = AbortSignal.timeout(this.timeoutMs);
      const started = performance.now();
      const elapsed = () => Math.round(performance.now() - started);
      try {
        const response = await request(url, {
          method: 'POST',
          headers,
          body: stored.body,
          dispatcher: this.agent,
          signal: timeout,
        });
        // Reading the reply is part of answering within the timeout.
        const text = await response.body.text();
        const ok = response.statusCode >= 200 && response.statusCode < 300;
        if (this.closed) return this.unsent(stored, attemptNumber);
        return this.record(stored, attemptNumber, {
          ok,
          statusCode: response.statusCode,
          responseBody: text.slice(0, RESPONSE_BODY_LIMIT),
          errorMessage: ok ? undefined : `Endpoint answered ${response.statusCode}`,
          responseTime: elapsed(),
          url,
        });
      } catch (error) {
        if (this.closed) return this.unsent(stored, attemptNumber);
        const errorMessage = timeout.aborted ? `Timed out after ${this.timeoutMs} ms` : errorText(error);
        return this.record(stored, attemptNumber, { ok: false, statusCode: 0, errorMessage, responseTime: elapsed(), url });
      }
    } finally {
      this.slots.release();
    }
  }

  /** An attempt cut short by stop(): not logged, not counted. */
  private unsent(stored: StoredEvent, attemptNumber: number): LogRecord {
    return {
      id: '',
      stored,
      url: this.url ?? '',
      ok: false,
      statusCode: 0,
      errorMessage: 'Simulator stopped',
      attemptNumber,
      responseTime: 0,
      createdAt: Date.now(),
    };
  }

  private record(
    stored: StoredEvent,
    attemptNumber: number,
    result: { ok: boolean; statusCode: number; responseBody?: string; errorMessage?: string; responseTime: number; url?: string },
    /** False for a drop: logged as Pozy would show it, but no attempt was made. */
    sent = true,
  ): LogRecord {
    if (sent) {
      this.counters.attempts += 1;
      if (result.ok) this.counters.successes += 1;
      else this.counters.failures += 1;
    }
    const record: LogRecord = {
      id: this.rng.objectId(),
      stored,
      url: result.url ?? this.url ?? '',
      ok: result.ok,
      statusCode: result.statusCode,
      responseBody: result.responseBody,
      errorMessage: result.errorMessage,
      attemptNumber,
      responseTime: result.responseTime,
      createdAt: Date.now(),
    };
    this.log.push(record);
    // Trimmed in batches: shifting one row at a time would copy the whole array on every attempt.
    if (this.log.length > this.maxLogRows * 1.1) this.log = this.log.slice(this.log.length - this.maxLogRows);
    return record;
  }

  private toRow(record: LogRecord): WebhookLogRow {
    const row: WebhookLogRow = {
      _id: record.id,
      userId: this.options.userId,
      webhookId: this.options.webhookId,
      webhookName: this.options.webhookName,
      eventId: record.stored.id,
      event: record.stored.event,
      url: record.url,
      status: record.ok ? 'success' : 'failed',
      statusCode: record.statusCode,
      requestPayload: JSON.parse(record.stored.body) as unknown,
      attemptNumber: record.attemptNumber,
      responseTime: record.responseTime,
      createdAt: new Date(record.createdAt).toISOString(),
    };
    if (record.responseBody !== undefined) row.responseBody = record.responseBody;
    if (record.errorMessage !== undefined) row.errorMessage = record.errorMessage;
    return row;
  }
}

/** An error's message, with the code of its cause when there is one (e.g. ECONNREFUSED). */
function errorText(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = (error as { cause?: unknown }).cause;
  const code = (error as { code?: unknown }).code ?? (cause instanceof Error ? (cause as { code?: unknown }).code : undefined);
  return typeof code === 'string' && !error.message.includes(code) ? `${error.message} (${code})` : error.message;
}
