/**
 * One Pozy workspace: the data one API key reaches. Each has its own world (seeded from its own seed), its own rate
 * limit and API faults, its own webhook subscriptions, sender and delivery log, and its own request counts; the
 * simulator serves any number of them on one port, telling them apart by the Bearer key.
 *
 * `WorkspaceRuntime` is what the server and the simulator work with; `PozyWorkspace` is the handle tests hold.
 */
import type { Dispatcher } from 'undici';
import { FaultConfig, mergeFaults, NO_FAULTS, Rng, rngStreams } from './faults';
import { RateLimiter } from './rate-limit';
import type { ApiStats } from './simulator-server';
import { LogQuery, SenderStats, SubscriptionSettings, SubscriptionView, WebhookLogRow, WebhookSender } from './webhook-sender';
import { PozyWorld } from './world';
import type { ExistingWorkspace } from './world/existing-workspace';
import type { PozyEvent } from './world/pozy-shapes';

/** Pozy's most subscriptions per user. */
export const MAX_SUBSCRIPTIONS = 50;
export const SIMULATOR_WEBHOOK_NAME = 'pozy-sync (simulator)';

export interface WorkspaceOptions {
  apiKey: string;
  /** Default: one made from the simulator's seed and the key, unlike every other workspace's. */
  seed?: number;
  /** Sliding-window limit per window (default 600, Pozy's for 3–2,000 accounts), all clients of the key together. */
  rateLimitPerMinute?: number;
  /** Default: the simulator's `rateLimitWindowMs`. */
  rateLimitWindowMs?: number;
  /** Another client of the key spending this many of its requests per window (default 0). */
  otherClientPerMinute?: number;
  /** This workspace's faults, API and webhooks (default none). */
  faults?: Partial<FaultConfig>;
  /** A first subscription, taking every event (as the simulator's own does); without it, none until one is made. */
  webhook?: { url: string; secret?: string; name?: string; events?: readonly string[] };
  /** A workspace that existed before pozy-sync: made at once, without events. */
  seedExisting?: ExistingWorkspace;
  /** A small world made with events (delivered to `webhook`, when given). */
  seedWorld?: { profiles?: number; accountsPerProfile?: number; posts?: number };
  /** The unknown-field switch (`PozyWorld.setUnknownFields`). */
  unknownFields?: boolean;
  /** Default: the simulator's `webhookConcurrency`. */
  webhookConcurrency?: number;
  /** Default: the simulator's `autoDisableAfterFailures`. */
  autoDisableAfterFailures?: number;
}

/** What every workspace of one simulator shares. */
export interface WorkspaceContext {
  timeScale?: number;
  rateLimitWindowMs: number;
  webhookConcurrency?: number;
  autoDisableAfterFailures?: number;
  clock?: () => number;
  dispatcher: Dispatcher;
}

export interface SimulatorStats {
  webhooks: SenderStats;
  api: ApiStats;
}

/** A request count per route and status. */
export class RequestCounts {
  requests = 0;
  readonly byRoute: Record<string, Record<string, number>> = {};

  add(route: string, status: string): void {
    const byStatus = (this.byRoute[route] ??= {});
    byStatus[status] = (byStatus[status] ?? 0) + 1;
    this.requests += 1;
  }

  snapshot(): Pick<ApiStats, 'requests' | 'byRoute'> {
    return { requests: this.requests, byRoute: Object.fromEntries(Object.entries(this.byRoute).map(([k, v]) => [k, { ...v }])) };
  }
}

export class WorkspaceRuntime {
  readonly world: PozyWorld;
  readonly sender: WebhookSender;
  readonly limiter: RateLimiter;
  /** Per-request fault draws. */
  readonly apiRng: Rng;
  /** Request ids and subscription ids. */
  readonly ids: Rng;
  readonly counts = new RequestCounts();
  /** The subscription made with the workspace (`webhook`, or the simulator's own), if any. */
  readonly webhookId: string | undefined;
  /** One mutable cell read by the sender and the server, so setFaults applies to the very next decision. */
  faultConfig: FaultConfig;
  private readonly unsubscribe: () => void;

  constructor(
    readonly apiKey: string,
    readonly seed: number,
    options: Omit<WorkspaceOptions, 'apiKey' | 'seed'> & { alwaysSubscribed?: boolean },
    context: WorkspaceContext,
  ) {
    if (options.seedExisting && options.seedWorld) throw new RangeError('seedExisting and seedWorld: one or the other');
    const streams = rngStreams(seed);
    this.apiRng = streams.api;
    this.ids = streams.ids;
    this.faultConfig = mergeFaults(NO_FAULTS, options.faults ?? {});
    this.world = new PozyWorld({ seed, clock: context.clock, unknownFields: options.unknownFields });
    this.sender = new WebhookSender({
      userId: this.world.userId,
      ids: this.ids,
      timeScale: context.timeScale,
      concurrency: options.webhookConcurrency ?? context.webhookConcurrency,
      autoDisableAfterFailures: options.autoDisableAfterFailures ?? context.autoDisableAfterFailures,
      dispatcher: context.dispatcher,
      rng: streams.sender,
      faults: () => this.faultConfig,
    });
    // The simulator's own subscription exists even without a URL, so `sim.webhookId` always names one.
    const webhook = options.webhook;
    this.webhookId =
      webhook || options.alwaysSubscribed
        ? this.sender.addSubscription({
            name: webhook?.name ?? SIMULATOR_WEBHOOK_NAME,
            url: webhook?.url,
            secret: webhook?.secret,
            events: webhook?.events ?? [],
          })._id
        : undefined;
    // Last: its other client runs on a timer, which a failure above would leave behind.
    this.limiter = new RateLimiter(
      options.rateLimitPerMinute ?? 600,
      options.rateLimitWindowMs ?? context.rateLimitWindowMs,
      options.otherClientPerMinute ?? 0,
    );
    this.unsubscribe = this.world.onEvent((event) => this.sender.enqueue(event));
    try {
      if (options.seedExisting) this.world.seedExisting(options.seedExisting);
      if (options.seedWorld) this.world.seedWorld(options.seedWorld);
    } catch (error) {
      void this.close();
      throw error;
    }
  }

  faults(): Readonly<FaultConfig> {
    return this.faultConfig;
  }

  apiStats(): ApiStats {
    return { ...this.counts.snapshot(), ...this.limiter.stats() };
  }

  stats(): SimulatorStats {
    return { webhooks: this.sender.stats(), api: this.apiStats() };
  }

  /** Stops the other client and every delivery under way; the world stays readable. */
  async close(): Promise<void> {
    this.unsubscribe();
    this.limiter.close();
    await this.sender.close();
  }
}

/** A workspace of the simulator, as tests drive it: its world, its key's rate limit and faults, its subscriptions. */
export class PozyWorkspace {
  constructor(private readonly runtime: WorkspaceRuntime) {}

  get apiKey(): string {
    return this.runtime.apiKey;
  }

  get seed(): number {
    return this.runtime.seed;
  }

  get world(): PozyWorld {
    return this.runtime.world;
  }

  /** The subscription made with the workspace (`webhook`; the first workspace always has one), if any. */
  get webhookId(): string | undefined {
    return this.runtime.webhookId;
  }

  get faults(): Readonly<FaultConfig> {
    return this.runtime.faultConfig;
  }

  /** Changes some of this workspace's faults, from its next request or delivery on. */
  setFaults(patch: Partial<FaultConfig>): void {
    this.runtime.faultConfig = mergeFaults(this.runtime.faultConfig, patch);
  }

  get rateLimitPerMinute(): number {
    return this.runtime.limiter.window.limit;
  }

  get rateLimitWindowMs(): number {
    return this.runtime.limiter.window.windowMs;
  }

  /** From now on, another client of the key spends `n` requests per rate-limit window (0: stops it). */
  setOtherClientPerMinute(n: number): void {
    this.runtime.limiter.setOtherClient(n);
  }

  /** When each of pozy-sync's requests that this key's window took arrived (Unix ms, oldest first). */
  acceptedAt(): number[] {
    return this.runtime.limiter.acceptedAt();
  }

  /** The most of pozy-sync's requests this key's window took within any `windowMs` (default: its window). */
  mostAcceptedInWindow(windowMs: number = this.rateLimitWindowMs): number {
    return this.runtime.limiter.mostAcceptedInWindow(windowMs);
  }

  stats(): SimulatorStats {
    return this.runtime.stats();
  }

  /** Resolves once none of this workspace's deliveries is waiting, in flight or scheduled for a retry. */
  idle(): Promise<void> {
    return this.runtime.sender.idle();
  }

  /** Sends this envelope to the workspace's subscriptions as if its world had made it. */
  sendEvent(event: PozyEvent): void {
    this.runtime.sender.enqueue(event);
  }

  /** Points the workspace's own subscription (`webhookId`) elsewhere; undefined: its events stop being delivered. */
  setWebhookUrl(url: string | undefined): void {
    const id = this.runtime.webhookId;
    if (id === undefined || !this.runtime.sender.updateSubscription(id, { url })) {
      throw new Error('This workspace has no subscription of its own (made with `webhook`), or it was deleted');
    }
  }

  /** As `GET /v1/webhooks/settings` lists them, in creation order. */
  subscriptions(): SubscriptionView[] {
    return this.runtime.sender.subscriptions();
  }

  subscription(id: string): SubscriptionView | undefined {
    return this.runtime.sender.subscription(id);
  }

  /** As `POST /v1/webhooks/settings` makes one, unchecked; `events` absent or empty: every event. */
  addSubscription(settings: { url: string; secret?: string; name?: string; events?: readonly string[]; isActive?: boolean }): SubscriptionView {
    if (this.runtime.sender.subscriptionCount >= MAX_SUBSCRIPTIONS) throw new RangeError(`At most ${MAX_SUBSCRIPTIONS} subscriptions per workspace`);
    return this.runtime.sender.addSubscription({
      name: settings.name ?? SIMULATOR_WEBHOOK_NAME,
      url: settings.url,
      secret: settings.secret,
      events: settings.events ?? [],
      isActive: settings.isActive,
    });
  }

  /** As `PUT /v1/webhooks/settings` changes one, unchecked. */
  updateSubscription(id: string, patch: Partial<Pick<SubscriptionSettings, 'name' | 'url' | 'secret' | 'events' | 'isActive'>>): SubscriptionView {
    return this.known(id, this.runtime.sender.updateSubscription(id, patch));
  }

  /** As `DELETE /v1/webhooks/settings` removes one: deliveries under way to it are given up. */
  removeSubscription(id: string): void {
    if (!this.runtime.sender.removeSubscription(id)) this.known(id, undefined);
  }

  /**
   * Pozy's auto-disable by hand: an inactive subscription gets no deliveries (its events stay in the world, and
   * pending retries to it are given up) until turned on again, here or by `PUT` with `isActive: true`.
   */
  setSubscriptionActive(id: string, active: boolean): SubscriptionView {
    return this.known(id, this.runtime.sender.updateSubscription(id, { isActive: active }));
  }

  /** Stages Pozy's count of failed attempts since the subscription's last success. */
  setSubscriptionFailureCount(id: string, failureCount: number): SubscriptionView {
    return this.known(id, this.runtime.sender.setFailureCount(id, failureCount));
  }

  /** The delivery log, newest first, as `GET /v1/webhooks/logs` pages it (default: the first 100 rows). */
  logs(query: Partial<LogQuery> = {}): WebhookLogRow[] {
    return this.runtime.sender.logs({ limit: 100, skip: 0, ...query }).rows;
  }

  private known(id: string, view: SubscriptionView | undefined): SubscriptionView {
    if (!view) throw new Error(`No subscription ${id} in this workspace`);
    return view;
  }
}
