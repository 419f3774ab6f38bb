/**
 * The Pozy simulator: an in-memory world served as the Pozy API on loopback, whose events are delivered as signed
 * webhooks to one subscription, with switchable faults; deterministic from a seed (see faults.ts for the streams).
 */
import { FaultConfig, mergeFaults, NO_FAULTS, rngStreams } from './faults';
import { ApiStats, SimulatorServer } from './simulator-server';
import { SenderStats, WebhookSender } from './webhook-sender';
import { PozyWorld } from './world';
import type { PozyEvent } from './world/pozy-shapes';

export interface SimulatorOptions {
  /** 0 or absent: any free port. */
  port?: number;
  /** Default 127.0.0.1 (loopback only). */
  host?: string;
  apiKey: string;
  /** The single webhook subscription; without it events are not delivered (nor logged). */
  webhook?: { url: string; secret?: string };
  seed?: number;
  /** Webhook retry delays are divided by this (e.g. 1000: the 10 s retry comes after 10 ms). */
  timeScale?: number;
  faults?: Partial<FaultConfig>;
  /** Sliding-window limit per minute (default 600, Pozy's for 3–2,000 accounts), all clients of the key together. */
  rateLimitPerMinute?: number;
  /** The rate limit's window, Pozy's minute (default 60,000): shrink it to test in seconds what takes minutes. */
  rateLimitWindowMs?: number;
  /**
   * Another client of the same API key (the team's own product) spending this many requests per window, spread
   * evenly over it (default 0). It shares the window with pozy-sync's requests: `X-RateLimit-Remaining` shows it,
   * and together they meet 429. Change it with `setOtherClientPerMinute`.
   */
  otherClientPerMinute?: number;
  /** Most webhook attempts in flight at once (default 32). */
  webhookConcurrency?: number;
  /** The world's clock (default Date.now); a fixed one makes timestamps replay too. */
  clock?: () => number;
  /**
   * Pozy's clock lags this host's by this much (ms; negative: runs ahead; default 0): event timestamps, updatedAt
   * and the API's `Date` header all come from it.
   */
  clockOffsetMs?: number;
}

export interface SimulatorStats {
  webhooks: SenderStats;
  api: ApiStats;
}

export const SIMULATOR_WEBHOOK_NAME = 'pozy-sync (simulator)';

export class PozySimulator {
  private stopping: Promise<void> | undefined;

  private constructor(
    readonly url: string,
    readonly apiKey: string,
    readonly world: PozyWorld,
    /** The one subscription's id, for `GET /v1/webhooks/logs` and the redeliver and test endpoints. */
    readonly webhookId: string,
    readonly seed: number,
    private readonly sender: WebhookSender,
    private readonly server: SimulatorServer,
    private readonly unsubscribe: () => void,
    private readonly faultsRef: { current: FaultConfig },
  ) {}

  static async start(options: SimulatorOptions): Promise<PozySimulator> {
    const seed = options.seed ?? 1;
    const streams = rngStreams(seed);
    // One mutable cell read by the sender and the server, so setFaults applies to the very next decision.
    const faultsRef = { current: mergeFaults(NO_FAULTS, options.faults ?? {}) };
    const offset = options.clockOffsetMs ?? 0;
    const pozyNow = () => Date.now() - offset;
    const world = new PozyWorld({ seed, clock: options.clock ?? (offset === 0 ? undefined : pozyNow) });
    const webhookId = streams.ids.objectId();
    const sender = new WebhookSender({
      userId: world.userId,
      webhookId,
      webhookName: SIMULATOR_WEBHOOK_NAME,
      url: options.webhook?.url,
      secret: options.webhook?.secret,
      timeScale: options.timeScale,
      concurrency: options.webhookConcurrency,
      rng: streams.sender,
      faults: () => faultsRef.current,
    });
    let server: SimulatorServer;
    try {
      server = await SimulatorServer.start({
        world,
        sender,
        apiKey: options.apiKey,
        webhookId,
        webhookName: SIMULATOR_WEBHOOK_NAME,
        rng: streams.api,
        ids: streams.ids,
        faults: () => faultsRef.current,
        now: pozyNow,
        rateLimitPerMinute: options.rateLimitPerMinute ?? 600,
        rateLimitWindowMs: options.rateLimitWindowMs,
        otherClientPerMinute: options.otherClientPerMinute,
        port: options.port,
        host: options.host,
      });
    } catch (error) {
      await sender.close();
      throw error;
    }
    const unsubscribe = world.onEvent((event) => sender.enqueue(event));
    return new PozySimulator(server.url, options.apiKey, world, webhookId, seed, sender, server, unsubscribe, faultsRef);
  }

  get faults(): Readonly<FaultConfig> {
    return this.faultsRef.current;
  }

  /** Changes some faults, from the next request or delivery on; `setFaults(NO_FAULTS)` turns them all off. */
  setFaults(patch: Partial<FaultConfig>): void {
    this.faultsRef.current = mergeFaults(this.faultsRef.current, patch);
  }

  /** Points the subscription elsewhere (undefined: events stop being delivered). Retries go to the new URL. */
  setWebhookUrl(url: string | undefined): void {
    this.sender.setUrl(url);
  }

  /**
   * Sends this envelope as one of the world's events is sent (delivered or dropped as the faults say, retried,
   * logged), though the world never made it: an event dated long ago, a delivery captured and sent again.
   */
  sendEvent(event: PozyEvent): void {
    this.sender.enqueue(event);
  }

  /** Resolves once no webhook delivery is waiting, in flight or scheduled for a retry. */
  idle(): Promise<void> {
    return this.sender.idle();
  }

  stats(): SimulatorStats {
    return { webhooks: this.sender.stats(), api: this.server.stats() };
  }

  /** The rate limit's window (ms): a minute unless `rateLimitWindowMs` shrank it. */
  get rateLimitWindowMs(): number {
    return this.server.rateLimiter.window.windowMs;
  }

  /** From now on, another client of the key spends `n` requests per rate-limit window (0: stops it). */
  setOtherClientPerMinute(n: number): void {
    this.server.rateLimiter.setOtherClient(n);
  }

  /**
   * When each authenticated request of pozy-sync's that the rate-limit window took arrived (Unix ms, oldest first),
   * whatever it was answered after (an injected fault included); those the window refused are `stats().api.rateLimited`.
   */
  acceptedAt(): number[] {
    return this.server.rateLimiter.acceptedAt();
  }

  /** The most requests of pozy-sync's the window took within any `windowMs` (default: the rate limit's window). */
  mostAcceptedInWindow(windowMs: number = this.rateLimitWindowMs): number {
    return this.server.rateLimiter.mostAcceptedInWindow(windowMs);
  }

  /** Stops serving (held and keep-alive connections included), the other client, and every pending delivery. Idempotent. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      this.unsubscribe();
      await this.server.close();
      await this.sender.close();
    })();
    return this.stopping;
  }
}
