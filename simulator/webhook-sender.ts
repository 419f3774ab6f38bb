/**
 * Delivers one workspace's events to its subscriptions the way Pozy does (docs/pozy-api.md: its API reference, and
 * its guide where they differ): each active subscription gets the events its `events` name (every event when the
 * list is empty), signed with its own secret; the envelope is serialized once and stored, so every retry,
 * redelivery and subscription gets the same bytes; the X-Pozy-* headers; 2xx within 5 s is success; anything else
 * climbs the 7-attempt ladder, then dead-letters. Every attempt is a log row, as `GET /v1/webhooks/logs` shows them.
 */
import { performance } from 'node:perf_hooks';
import { Agent, Dispatcher, request } from 'undici';
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
  /** Events handed to the sender (including those no subscription took). */
  eventsEmitted: number;
  /** Events no subscription took (none active with a URL whose `events` name it): neither sent nor logged. */
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
  /** Deliveries given up before an attempt because their subscription was turned off or deleted meanwhile. */
  abandoned: number;
  /** Subscriptions turned off by `autoDisableAfterFailures`. */
  autoDisabled: number;
  /** Deliveries still under way (one per event and subscription): waiting, in flight or between retries. */
  pending: number;
}

/** What a subscription is made with; `events` empty: every event (the simulator's own subscription). */
export interface SubscriptionSettings {
  name: string;
  url: string | undefined;
  /** Undefined or '': deliveries are not signed. */
  secret?: string;
  events: readonly string[];
  isActive?: boolean;
}

/** A subscription as `GET /v1/webhooks/settings` lists it (never its secret). */
export interface SubscriptionView {
  _id: string;
  name: string;
  /** '' while it has no URL. */
  url: string;
  events: string[];
  /** False while turned off, or while it has no URL. */
  isActive: boolean;
  /** Failed attempts since the last success. */
  failureCount: number;
  /** The last successful attempt (ISO 8601); absent before the first. */
  lastFiredAt?: string;
}

export interface SenderOptions {
  userId: string;
  /** Subscription ids. */
  ids: Rng;
  /** Retry delays are divided by this (1 = real time). */
  timeScale?: number;
  /** Most HTTP attempts in flight at once. */
  concurrency?: number;
  timeoutMs?: number;
  /** Oldest log rows (and stored payloads) are forgotten past this many. */
  maxLogRows?: number;
  /** Failed attempts in a row after which a subscription turns itself off (Pozy: 10); 0 or absent: never. */
  autoDisableAfterFailures?: number;
  /** Connections, shared with other senders and closed by whoever made them; absent: the sender's own. */
  dispatcher?: Dispatcher;
  rng: Rng;
  faults: () => Readonly<FaultConfig>;
}

export type RedeliverResult =
  { outcome: 'success'; statusCode: number } | { outcome: 'failed'; statusCode: number; message: string } | { outcome: 'no_url' | 'not_found' };

interface StoredEvent {
  id: string;
  event: string;
  body: string;
  /** The subscriptions it was sent to: a redelivery to another is a 422, as nothing of it was logged there. */
  webhookIds: Set<string>;
}

interface Subscription {
  id: string;
  name: string;
  url: string | undefined;
  secret: string | undefined;
  /** Empty: every event. */
  events: string[];
  active: boolean;
  failureCount: number;
  lastFiredAt: number | undefined;
  removed: boolean;
}

interface LogRecord {
  id: string;
  stored: StoredEvent;
  webhookId: string;
  webhookName: string;
  url: string;
  ok: boolean;
  statusCode: number;
  responseBody?: string;
  errorMessage?: string;
  attemptNumber: number;
  responseTime: number;
  createdAt: number;
}

/** One delivery's fault decisions, drawn when the event is taken. */
interface Plan {
  drop: boolean;
  delayMs: number;
  duplicate: boolean;
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
  private readonly timeScale: number;
  private readonly timeoutMs: number;
  private readonly maxLogRows: number;
  private readonly autoDisableAfter: number;
  private readonly rng: Rng;
  private readonly dispatcher: Dispatcher;
  private readonly ownDispatcher: Agent | undefined;
  private readonly slots: Slots;
  private closed = false;
  private readonly subs = new Map<string, Subscription>();
  private readonly sleepers = new Map<NodeJS.Timeout, () => void>();
  /** Attempts in flight, aborted by close(): the dispatcher may be shared, so closing it is not ours to do. */
  private readonly inFlight = new Set<AbortController>();
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
    abandoned: 0,
    autoDisabled: 0,
  };

  constructor(private readonly options: SenderOptions) {
    this.timeScale = options.timeScale ?? 1;
    if (!(this.timeScale > 0)) throw new RangeError('timeScale must be > 0');
    this.timeoutMs = options.timeoutMs ?? DELIVERY_TIMEOUT_MS;
    this.maxLogRows = options.maxLogRows ?? 100_000;
    this.autoDisableAfter = options.autoDisableAfterFailures ?? 0;
    if (!Number.isSafeInteger(this.autoDisableAfter) || this.autoDisableAfter < 0) {
      throw new RangeError('autoDisableAfterFailures must be a non-negative integer');
    }
    this.rng = options.rng;
    const concurrency = options.concurrency ?? 32;
    if (!Number.isSafeInteger(concurrency) || concurrency < 1) throw new RangeError('webhookConcurrency must be a positive integer');
    this.slots = new Slots(concurrency);
    this.ownDispatcher = options.dispatcher ? undefined : new Agent({ connections: concurrency });
    this.dispatcher = options.dispatcher ?? this.ownDispatcher!;
  }

  // ---- subscriptions ----

  /** A new subscription, with an id from the `ids` stream. */
  addSubscription(settings: SubscriptionSettings): SubscriptionView {
    const sub: Subscription = {
      id: this.options.ids.objectId(),
      name: settings.name,
      url: settings.url,
      secret: settings.secret || undefined,
      events: [...new Set(settings.events)],
      active: settings.isActive ?? true,
      failureCount: 0,
      lastFiredAt: undefined,
      removed: false,
    };
    this.subs.set(sub.id, sub);
    return this.view(sub);
  }

  /**
   * Changes only the fields given (a secret of '' removes it); turning a subscription back on clears its
   * failureCount, so auto-disable does not strike again at the next failure. Undefined: no such subscription.
   */
  updateSubscription(id: string, patch: Partial<SubscriptionSettings>): SubscriptionView | undefined {
    const sub = this.subs.get(id);
    if (!sub) return undefined;
    if (patch.name !== undefined) sub.name = patch.name;
    if ('url' in patch) sub.url = patch.url;
    if (patch.secret !== undefined) sub.secret = patch.secret || undefined;
    if (patch.events !== undefined) sub.events = [...new Set(patch.events)];
    if (patch.isActive !== undefined) {
      if (patch.isActive && !sub.active) sub.failureCount = 0;
      sub.active = patch.isActive;
    }
    return this.view(sub);
  }

  /** Deliveries under way to it are given up; its log rows stay. False: no such subscription. */
  removeSubscription(id: string): boolean {
    const sub = this.subs.get(id);
    if (!sub) return false;
    sub.removed = true;
    this.subs.delete(id);
    return true;
  }

  /** Pozy's own bookkeeping, for a test to stage: a subscription that failed this often since its last success. */
  setFailureCount(id: string, failureCount: number): SubscriptionView | undefined {
    if (!Number.isSafeInteger(failureCount) || failureCount < 0) throw new RangeError('failureCount must be a non-negative integer');
    const sub = this.subs.get(id);
    if (!sub) return undefined;
    sub.failureCount = failureCount;
    return this.view(sub);
  }

  subscription(id: string): SubscriptionView | undefined {
    const sub = this.subs.get(id);
    return sub && this.view(sub);
  }

  /** In creation order. */
  subscriptions(): SubscriptionView[] {
    return [...this.subs.values()].map((sub) => this.view(sub));
  }

  get subscriptionCount(): number {
    return this.subs.size;
  }

  /** The subscription's URL now (undefined: none, or no such subscription). */
  urlOf(id: string): string | undefined {
    return this.subs.get(id)?.url;
  }

  // ---- deliveries ----

  /** Takes one event from the world; fault decisions are drawn now, in emission order, so a seed replays them. */
  enqueue(event: PozyEvent): void {
    this.counters.eventsEmitted += 1;
    const targets = this.closed ? [] : [...this.subs.values()].filter((sub) => this.live(sub) && sub.url !== undefined && takes(sub, event.event));
    if (targets.length === 0) {
      this.counters.eventsSkipped += 1;
      return;
    }
    const stored = this.store(event, targets);
    const faults = this.options.faults();
    // Every draw before any delivery starts, in subscription order: one subscription draws what one always did.
    const plans = targets.map((): Plan => {
      const drop = this.rng.chance(faults.dropRate);
      const delayMs = faults.reorderMaxDelayMs > 0 ? this.rng.next() * faults.reorderMaxDelayMs : 0;
      const duplicate = this.rng.chance(faults.duplicateRate);
      return { drop, delayMs, duplicate };
    });
    targets.forEach((sub, i) => this.track(() => this.deliver(sub, stored, plans[i])));
  }

  /** One more attempt of a stored event, same bytes, to the subscription's current URL; logged as a new row (attempt 1). */
  async redeliver(webhookId: string, eventId: string): Promise<RedeliverResult> {
    const sub = this.subs.get(webhookId);
    if (sub?.url === undefined) return { outcome: 'no_url' };
    const stored = this.events.get(eventId);
    if (!stored?.webhookIds.has(sub.id)) return { outcome: 'not_found' };
    this.counters.redeliveries += 1;
    const row = await this.trackResult(() => this.attemptRow(sub, stored, 1));
    return row.ok
      ? { outcome: 'success', statusCode: row.statusCode }
      : { outcome: 'failed', statusCode: row.statusCode, message: row.errorMessage ?? `Endpoint answered ${row.statusCode}` };
  }

  /** A `webhook.test` event with `test: true` and a fresh id to one subscription: one synchronous attempt, no retries. */
  async sendTest(webhookId: string): Promise<{ ok: boolean; eventId?: string }> {
    const sub = this.subs.get(webhookId);
    if (sub?.url === undefined) return { ok: false };
    this.counters.tests += 1;
    const event: PozyEvent = {
      id: this.rng.uuid(),
      event: 'webhook.test',
      message: 'This is a test webhook from Pozy',
      timestamp: new Date().toISOString(),
      test: true,
    };
    const stored = this.store(event, [sub]);
    const row = await this.trackResult(() => this.attemptRow(sub, stored, 1));
    return { ok: row.ok, eventId: event.id };
  }

  /** Log rows, newest first, and how many match in all. */
  logs(query: LogQuery): { rows: WebhookLogRow[]; total: number } {
    const rows: WebhookLogRow[] = [];
    let total = 0;
    for (let i = this.log.length - 1; i >= 0; i--) {
      const record = this.log[i];
      if (query.webhookId !== undefined && record.webhookId !== query.webhookId) continue;
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

  /** Cancels every scheduled retry and aborts the attempts in flight (and closes its own connections, if any). */
  async close(): Promise<void> {
    this.closed = true;
    this.slots.close();
    for (const [timer, wake] of this.sleepers) {
      clearTimeout(timer);
      wake();
    }
    this.sleepers.clear();
    // Aborted attempts fail at once; they see the sender closing and log nothing.
    for (const controller of this.inFlight) controller.abort();
    await this.ownDispatcher?.destroy();
    await Promise.allSettled([...this.running]);
  }

  // ---- internals ----

  private view(sub: Subscription): SubscriptionView {
    const view: SubscriptionView = {
      _id: sub.id,
      name: sub.name,
      url: sub.url ?? '',
      events: [...sub.events],
      isActive: sub.active && sub.url !== undefined,
      failureCount: sub.failureCount,
    };
    if (sub.lastFiredAt !== undefined) view.lastFiredAt = new Date(sub.lastFiredAt).toISOString();
    return view;
  }

  /** Still there and turned on: deliveries to it go ahead. */
  private live(sub: Subscription): boolean {
    return !sub.removed && sub.active;
  }

  private async deliver(sub: Subscription, stored: StoredEvent, plan: Plan): Promise<void> {
    if (plan.drop) {
      this.counters.drops += 1;
      const errorMessage = 'Dropped (simulated fault: dropRate); never retried';
      this.record(sub, stored, 1, { ok: false, statusCode: 0, errorMessage, responseTime: 0 }, false);
      return;
    }
    if (plan.delayMs > 0 && !(await this.sleep(plan.delayMs))) return;
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      if (attempt > 1 && !(await this.sleep((RETRY_LADDER_S[attempt - 1] * 1000) / this.timeScale))) return;
      if (!this.live(sub)) {
        this.counters.abandoned += 1;
        return;
      }
      let ok: boolean;
      if (attempt === 1 && plan.duplicate) {
        // Both copies at once: the receiver's dedupe has to hold under a race, not only in sequence.
        this.counters.duplicates += 1;
        [ok] = await Promise.all([this.attempt(sub, stored, 1), this.attempt(sub, stored, 1)]);
      } else {
        ok = await this.attempt(sub, stored, attempt);
      }
      if (ok || this.closed) return;
    }
    this.counters.deadLettered += 1;
  }

  private store(event: PozyEvent, subs: readonly Subscription[]): StoredEvent {
    const stored: StoredEvent = { id: event.id, event: event.event, body: JSON.stringify(event), webhookIds: new Set(subs.map((s) => s.id)) };
    // The same id again (sendEvent of a captured envelope) also keeps the subscriptions it went to before.
    for (const id of this.events.get(stored.id)?.webhookIds ?? []) stored.webhookIds.add(id);
    this.events.delete(stored.id);
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

  private async attempt(sub: Subscription, stored: StoredEvent, attemptNumber: number): Promise<boolean> {
    return (await this.attemptRow(sub, stored, attemptNumber)).ok;
  }

  /** One HTTP attempt within a concurrency slot; logged unless the sender closed meanwhile. */
  private async attemptRow(sub: Subscription, stored: StoredEvent, attemptNumber: number): Promise<LogRecord> {
    if (!(await this.slots.acquire())) return this.unsent(sub, stored, attemptNumber);
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, this.timeoutMs);
    this.inFlight.add(controller);
    try {
      const url = sub.url;
      if (url === undefined) {
        return this.record(sub, stored, attemptNumber, { ok: false, statusCode: 0, errorMessage: 'No webhook URL', responseTime: 0 });
      }
      const headers: Record<string, string> = {
        'Content-Type': 'application/json',
        'User-Agent': 'Pozy-Webhooks/1.0',
        'X-Pozy-Event': stored.event,
        'X-Pozy-Event-Id': stored.id,
        'X-Pozy-Delivery-Id': this.rng.uuid(),
        'X-Pozy-Attempt': String(attemptNumber),
      };
      if (sub.secret) headers['X-Pozy-Signature'] = signPozyPayload(sub.secret, stored.body);
      const started = performance.now();
      const elapsed = () => Math.round(performance.now() - started);
      try {
        const response = await request(url, {
          method: 'POST',
          headers,
          body: stored.body,
          dispatcher: this.dispatcher,
          signal: controller.signal,
        });
        // Reading the reply is part of answering within the timeout.
        const text = await response.body.text();
        const ok = response.statusCode >= 200 && response.statusCode < 300;
        if (this.closed) return this.unsent(sub, stored, attemptNumber);
        return this.record(sub, stored, attemptNumber, {
          ok,
          statusCode: response.statusCode,
          responseBody: text.slice(0, RESPONSE_BODY_LIMIT),
          errorMessage: ok ? undefined : `Endpoint answered ${response.statusCode}`,
          responseTime: elapsed(),
          url,
        });
      } catch (error) {
        if (this.closed) return this.unsent(sub, stored, attemptNumber);
        const errorMessage = timedOut ? `Timed out after ${this.timeoutMs} ms` : errorText(error);
        return this.record(sub, stored, attemptNumber, { ok: false, statusCode: 0, errorMessage, responseTime: elapsed(), url });
      }
    } finally {
      clearTimeout(timer);
      this.inFlight.delete(controller);
      this.slots.release();
    }
  }

  /** An attempt cut short by stop(): not logged, not counted. */
  private unsent(sub: Subscription, stored: StoredEvent, attemptNumber: number): LogRecord {
    return {
      id: '',
      stored,
      webhookId: sub.id,
      webhookName: sub.name,
      url: sub.url ?? '',
      ok: false,
      statusCode: 0,
      errorMessage: 'Simulator stopped',
      attemptNumber,
      responseTime: 0,
      createdAt: Date.now(),
    };
  }

  private record(
    sub: Subscription,
    stored: StoredEvent,
    attemptNumber: number,
    result: { ok: boolean; statusCode: number; responseBody?: string; errorMessage?: string; responseTime: number; url?: string },
    /** False for a drop: logged as Pozy would show it, but no attempt was made. */
    sent = true,
  ): LogRecord {
    const createdAt = Date.now();
    if (sent) {
      this.counters.attempts += 1;
      if (result.ok) {
        this.counters.successes += 1;
        sub.failureCount = 0;
        sub.lastFiredAt = createdAt;
      } else {
        this.counters.failures += 1;
        sub.failureCount += 1;
        if (this.autoDisableAfter > 0 && sub.failureCount >= this.autoDisableAfter && sub.active) {
          sub.active = false;
          this.counters.autoDisabled += 1;
        }
      }
    }
    const record: LogRecord = {
      id: this.rng.objectId(),
      stored,
      webhookId: sub.id,
      webhookName: sub.name,
      url: result.url ?? sub.url ?? '',
      ok: result.ok,
      statusCode: result.statusCode,
      responseBody: result.responseBody,
      errorMessage: result.errorMessage,
      attemptNumber,
      responseTime: result.responseTime,
      createdAt,
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
      webhookId: record.webhookId,
      webhookName: record.webhookName,
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

/** Whether a subscription listening for `events` gets an event of this type. */
function takes(sub: Subscription, type: string): boolean {
  return sub.events.length === 0 || sub.events.includes(type);
}

/** An error's message, with the code of its cause when there is one (e.g. ECONNREFUSED). */
function errorText(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = (error as { cause?: unknown }).cause;
  const code = (error as { code?: unknown }).code ?? (cause instanceof Error ? (cause as { code?: unknown }).code : undefined);
  return typeof code === 'string' && !error.message.includes(code) ? `${error.message} (${code})` : error.message;
}
