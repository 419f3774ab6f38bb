/**
 * The Pozy simulator: in-memory workspaces served as the Pozy API on loopback, one per API key, whose events are
 * delivered as signed webhooks to each workspace's subscriptions, with switchable faults; deterministic from a seed
 * (see faults.ts for the streams). The workspace made from `apiKey` is the first: `sim.world`, `sim.webhookId`,
 * `sim.setFaults` and the rest are its; `addWorkspace` makes more (workspace.ts).
 */
import { Agent } from 'undici';
import { FaultConfig } from './faults';
import { SimulatorServer } from './simulator-server';
import { PozyWorkspace, SimulatorStats, WorkspaceContext, WorkspaceOptions, WorkspaceRuntime } from './workspace';
import { PozyWorld } from './world';
import type { PozyEvent } from './world/pozy-shapes';

export { PozyWorkspace, SIMULATOR_WEBHOOK_NAME } from './workspace';
export type { SimulatorStats, WorkspaceOptions } from './workspace';
export type { SubscriptionView, WebhookLogRow } from './webhook-sender';

export interface SimulatorOptions {
  /** 0 or absent: any free port. */
  port?: number;
  /** Default 127.0.0.1 (loopback only). */
  host?: string;
  /** The first workspace's key. */
  apiKey: string;
  /** The first workspace's own subscription; without it, one with no URL: events are not delivered (nor logged). */
  webhook?: { url: string; secret?: string };
  /** The first workspace's seed (default 1); other workspaces' default seeds are made from it and their keys. */
  seed?: number;
  /** Webhook retry delays are divided by this (e.g. 1000: the 10 s retry comes after 10 ms). */
  timeScale?: number;
  /** The first workspace's faults. */
  faults?: Partial<FaultConfig>;
  /** The first workspace's sliding-window limit per minute (default 600, Pozy's for 3–2,000 accounts), all clients of the key together. */
  rateLimitPerMinute?: number;
  /** The rate limit's window, Pozy's minute (default 60,000), for every workspace: shrink it to test in seconds what takes minutes. */
  rateLimitWindowMs?: number;
  /**
   * Another client of the first workspace's key (the team's own product) spending this many requests per window,
   * spread evenly over it (default 0). It shares the window with pozy-sync's requests: `X-RateLimit-Remaining` shows
   * it, and together they meet 429. Change it with `setOtherClientPerMinute`.
   */
  otherClientPerMinute?: number;
  /** Most webhook attempts in flight at once, per workspace (default 32). */
  webhookConcurrency?: number;
  /** Failed attempts in a row after which a subscription turns itself off, as Pozy's do at 10 (default 0: never). */
  autoDisableAfterFailures?: number;
  /** The worlds' clock (default Date.now); a fixed one makes timestamps replay too. */
  clock?: () => number;
  /**
   * Pozy's clock lags this host's by this much (ms; negative: runs ahead; default 0): event timestamps, updatedAt
   * and the API's `Date` header all come from it.
   */
  clockOffsetMs?: number;
  /** More workspaces at start, keyed `<keyPrefix>-1` to `<keyPrefix>-<count>`, each made with the rest of these options. */
  extraWorkspaces?: { count: number; keyPrefix: string } & Omit<WorkspaceOptions, 'apiKey' | 'seed'>;
}

interface Entry {
  runtime: WorkspaceRuntime;
  handle: PozyWorkspace;
}

export class PozySimulator {
  private stopping: Promise<void> | undefined;
  private readonly byKey = new Map<string, Entry>();
  private readonly removing = new Set<Promise<void>>();
  private server!: SimulatorServer;

  private constructor(
    private readonly first: Entry,
    private readonly context: WorkspaceContext,
    private readonly agent: Agent,
  ) {
    this.byKey.set(first.runtime.apiKey, first);
  }

  static async start(options: SimulatorOptions): Promise<PozySimulator> {
    const seed = options.seed ?? 1;
    const offset = options.clockOffsetMs ?? 0;
    const pozyNow = () => Date.now() - offset;
    // One pool of connections for every workspace; each workspace's sender bounds its own attempts in flight.
    const agent = new Agent();
    const context: WorkspaceContext = {
      timeScale: options.timeScale,
      rateLimitWindowMs: options.rateLimitWindowMs ?? 60_000,
      webhookConcurrency: options.webhookConcurrency,
      autoDisableAfterFailures: options.autoDisableAfterFailures,
      clock: options.clock ?? (offset === 0 ? undefined : pozyNow),
      dispatcher: agent,
    };
    let first: WorkspaceRuntime;
    try {
      first = new WorkspaceRuntime(
        options.apiKey,
        seed,
        {
          webhook: options.webhook,
          alwaysSubscribed: true,
          faults: options.faults,
          rateLimitPerMinute: options.rateLimitPerMinute,
          otherClientPerMinute: options.otherClientPerMinute,
        },
        context,
      );
    } catch (error) {
      await agent.destroy();
      throw error;
    }
    const sim = new PozySimulator({ runtime: first, handle: new PozyWorkspace(first) }, context, agent);
    try {
      sim.server = await SimulatorServer.start({
        workspaceOf: (apiKey) => sim.byKey.get(apiKey)?.runtime,
        fallback: () => sim.first.runtime,
        now: pozyNow,
        port: options.port,
        host: options.host,
      });
    } catch (error) {
      await first.close();
      await agent.destroy();
      throw error;
    }
    const extra = options.extraWorkspaces;
    if (extra) {
      const { count, keyPrefix, ...rest } = extra;
      try {
        for (let i = 1; i <= count; i++) sim.addWorkspace({ ...rest, apiKey: `${keyPrefix}-${i}` });
      } catch (error) {
        await sim.stop();
        throw error;
      }
    }
    return sim;
  }

  get url(): string {
    return this.server.url;
  }

  /** The first workspace, the one `apiKey` opens. */
  get firstWorkspace(): PozyWorkspace {
    return this.first.handle;
  }

  get apiKey(): string {
    return this.first.runtime.apiKey;
  }

  get world(): PozyWorld {
    return this.first.runtime.world;
  }

  /** The first workspace's own subscription, for `GET /v1/webhooks/logs` and the redeliver and test endpoints. */
  get webhookId(): string {
    return this.first.runtime.webhookId!;
  }

  get seed(): number {
    return this.first.runtime.seed;
  }

  /**
   * One more workspace, served from now on under its own key: its world seeded from its own seed (by default one
   * made from the simulator's seed and the key, different from every other workspace's), its rate limit (default
   * 600 a minute), its faults, and a subscription of its own if `webhook` is given.
   */
  addWorkspace(options: WorkspaceOptions): PozyWorkspace {
    if (this.stopping) throw new Error('The simulator is stopping');
    if (typeof options.apiKey !== 'string' || options.apiKey === '') throw new RangeError('apiKey must be a non-empty string');
    if (this.byKey.has(options.apiKey)) throw new RangeError('A workspace with this API key exists already');
    const { apiKey, seed: given, ...rest } = options;
    let seed = given ?? keySeed(this.first.runtime.seed, apiKey);
    const taken = (s: number) => [...this.byKey.values()].some((entry) => entry.runtime.seed === s);
    if (given === undefined) while (taken(seed)) seed = (seed + 1) >>> 0;
    const runtime = new WorkspaceRuntime(apiKey, seed, rest, this.context);
    const entry = { runtime, handle: new PozyWorkspace(runtime) };
    this.byKey.set(apiKey, entry);
    return entry.handle;
  }

  /** The workspace this key opens, if any. */
  workspace(apiKey: string): PozyWorkspace | undefined {
    return this.byKey.get(apiKey)?.handle;
  }

  /** Every workspace, the first one first. */
  workspaces(): PozyWorkspace[] {
    return [...this.byKey.values()].map((entry) => entry.handle);
  }

  /**
   * Its key answers 401 from now on; its pending deliveries and other client stop. The first workspace stays
   * for the simulator's life (stop() the simulator instead).
   */
  async removeWorkspace(apiKey: string): Promise<void> {
    const entry = this.byKey.get(apiKey);
    if (!entry) throw new RangeError('No workspace has this API key');
    if (entry === this.first) throw new RangeError('The first workspace cannot be removed');
    this.byKey.delete(apiKey);
    const closing = entry.runtime.close();
    this.removing.add(closing);
    try {
      await closing;
    } finally {
      this.removing.delete(closing);
    }
  }

  get faults(): Readonly<FaultConfig> {
    return this.first.handle.faults;
  }

  /** Changes some of the first workspace's faults, from the next request or delivery on; `setFaults(NO_FAULTS)` turns them all off. */
  setFaults(patch: Partial<FaultConfig>): void {
    this.first.handle.setFaults(patch);
  }

  /** Points the first workspace's subscription elsewhere (undefined: events stop being delivered). Retries go to the new URL. */
  setWebhookUrl(url: string | undefined): void {
    this.first.handle.setWebhookUrl(url);
  }

  /**
   * Sends this envelope as one of the first workspace's events is sent (delivered or dropped as the faults say,
   * retried, logged), though the world never made it: an event dated long ago, a delivery captured and sent again.
   */
  sendEvent(event: PozyEvent): void {
    this.first.handle.sendEvent(event);
  }

  /** Resolves once no delivery of any workspace is waiting, in flight or scheduled for a retry. */
  async idle(): Promise<void> {
    await Promise.all([...this.byKey.values()].map((entry) => entry.runtime.sender.idle()));
  }

  /** The first workspace's figures; its API figures also count the requests no key authenticated (401s). */
  stats(): SimulatorStats {
    const { webhooks, api } = this.first.runtime.stats();
    const anonymous = this.server.unauthenticatedCounts();
    const byRoute = api.byRoute;
    for (const [route, statuses] of Object.entries(anonymous.byRoute)) {
      const merged = (byRoute[route] ??= {});
      for (const [status, n] of Object.entries(statuses)) merged[status] = (merged[status] ?? 0) + n;
    }
    return { webhooks, api: { ...api, requests: api.requests + anonymous.requests, byRoute } };
  }

  /** The first workspace's rate-limit window (ms): a minute unless `rateLimitWindowMs` shrank it. */
  get rateLimitWindowMs(): number {
    return this.first.handle.rateLimitWindowMs;
  }

  /** From now on, another client of the first workspace's key spends `n` requests per rate-limit window (0: stops it). */
  setOtherClientPerMinute(n: number): void {
    this.first.handle.setOtherClientPerMinute(n);
  }

  /**
   * When each authenticated request of pozy-sync's that the first workspace's window took arrived (Unix ms, oldest
   * first), whatever it was answered after (an injected fault included); those the window refused are
   * `stats().api.rateLimited`.
   */
  acceptedAt(): number[] {
    return this.first.handle.acceptedAt();
  }

  /** The most requests of pozy-sync's the first workspace's window took within any `windowMs` (default: its window). */
  mostAcceptedInWindow(windowMs: number = this.rateLimitWindowMs): number {
    return this.first.handle.mostAcceptedInWindow(windowMs);
  }

  /** Stops serving (held and keep-alive connections included), the other clients, and every pending delivery. Idempotent. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      await this.server.close();
      await Promise.all([...[...this.byKey.values()].map((entry) => entry.runtime.close()), ...this.removing]);
      await this.agent.destroy();
    })();
    return this.stopping;
  }
}

/** A seed for a workspace from the simulator's and the key (FNV-1a), so a key keeps its world from run to run. */
function keySeed(base: number, apiKey: string): number {
  let h = 0x811c9dc5 ^ (base >>> 0);
  for (let i = 0; i < apiKey.length; i++) h = Math.imul(h ^ apiKey.charCodeAt(i), 0x01000193) >>> 0;
  return h >>> 0;
}
