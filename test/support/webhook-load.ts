import { Rng } from '../../simulator/faults';
import type { PozyWorld } from '../../simulator/world';
import type { PozyEvent } from '../../simulator/world/pozy-shapes';
import { deliver } from './pozy-events';

/** What became of the deliveries a load made. */
export interface LoadFigures {
  /** Events the world emitted. */
  emitted: number;
  /** Answered 2xx: stored (or a duplicate), or spooled. */
  accepted: number;
  spooled: number;
  /** Answers that were not 2xx, and deliveries that got no answer: Pozy sends those again, and so does the load. */
  refused: number;
  unanswered: number;
  /** The slowest answer 2xx, from its request to its answer (ms). */
  slowestAckMs: number;
}

/**
 * Webhooks as Pozy sends them, at about `perSecond`: each a random change of the simulator's world (so the mirror has a
 * truth to converge to), delivered by the test itself so that every answer is seen. A delivery not answered 2xx is
 * sent again, as Pozy does, until it is; `acceptedIds` holds every event answered 2xx, `firstStoredAfter` when the
 * first event after a moment was answered stored rather than spooled.
 */
export class WebhookLoad {
  readonly acceptedIds = new Set<string>();
  private readonly storedAt: number[] = [];
  private readonly pending: PozyEvent[] = [];
  private readonly figures: LoadFigures = { emitted: 0, accepted: 0, spooled: 0, refused: 0, unanswered: 0, slowestAckMs: 0 };
  private running = false;
  private halted = false;
  private loop: Promise<void> | undefined;
  private readonly unsubscribe: () => void;

  constructor(
    private readonly world: PozyWorld,
    private readonly baseUrl: () => string,
    private readonly options: { perSecond: number; seed: number; path?: string },
  ) {
    this.unsubscribe = world.onEvent((event) => {
      this.figures.emitted += 1;
      this.pending.push(event);
    });
  }

  start(): void {
    this.running = true;
    const rng = new Rng(this.options.seed);
    const tick = 1000 / this.options.perSecond;
    this.loop = (async () => {
      const inFlight = new Set<Promise<void>>();
      while (this.running) {
        this.world.randomStep(rng, { silent: false });
        for (const event of this.pending.splice(0)) {
          const sent = this.send(event).finally(() => inFlight.delete(sent));
          inFlight.add(sent);
        }
        await new Promise((resolve) => setTimeout(resolve, tick));
      }
      await Promise.all(inFlight);
    })();
  }

  /** Stops making changes and waits until every change made was answered 2xx. */
  async stop(): Promise<LoadFigures> {
    this.running = false;
    await this.loop;
    this.unsubscribe();
    return { ...this.figures };
  }

  /** After a failed test: stops at once, retrying nothing, so that no delivery outlives the test. */
  halt(): void {
    this.running = false;
    this.halted = true;
    this.unsubscribe();
  }

  /** When the first delivery answered stored (not spooled) at or after `since` (ms since the epoch) was answered. */
  firstStoredAfter(since: number): number | undefined {
    return this.storedAt.find((at) => at >= since);
  }

  get accepted(): number {
    return this.figures.accepted;
  }

  private async send(event: PozyEvent): Promise<void> {
    for (let attempt = 0; !this.halted; attempt += 1) {
      const sentAt = Date.now();
      const response = await deliver(this.baseUrl(), event as never, { path: this.options.path }).catch(() => undefined);
      if (response && response.status >= 200 && response.status < 300) {
        this.figures.slowestAckMs = Math.max(this.figures.slowestAckMs, Date.now() - sentAt);
        this.figures.accepted += 1;
        this.acceptedIds.add(event.id);
        if (response.body.spooled === true) this.figures.spooled += 1;
        else this.storedAt.push(Date.now());
        return;
      }
      if (response) this.figures.refused += 1;
      else this.figures.unanswered += 1;
      // Pozy's own retries are minutes apart; a test's are short, and bounded by the test's deadline.
      await new Promise((resolve) => setTimeout(resolve, Math.min(2_000, 200 * 2 ** attempt)));
    }
  }
}
