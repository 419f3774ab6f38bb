import { Injectable, Logger } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { ReconcileDispatcher } from '../reconcile/reconcile-dispatcher.service';
import { NewPozyEvent, PozyEventRepository } from './pozy-event.repository';

/** Events per statement at most. */
const MAX_BATCH = 200;

interface Waiting {
  event: NewPozyEvent;
  resolve: (inserted: boolean) => void;
  reject: (error: unknown) => void;
}

/**
 * Stores accepted events, grouping the deliveries that arrive while earlier inserts are in flight into one
 * statement (group commit): under load, one round trip and one commit serve many webhooks; when idle, an event
 * goes alone at once. Each caller is answered only after the statement holding its event has committed. If a
 * batch fails, its events are retried one by one, so one bad event cannot fail its neighbours.
 */
@Injectable()
export class EventIngester {
  private readonly logger = new Logger(EventIngester.name);
  private readonly maxInFlight: number;
  private readonly coalesceWindowMs: number;
  private queue: Waiting[] = [];
  private inFlight = 0;

  constructor(
    private readonly events: PozyEventRepository,
    private readonly dispatcher: ReconcileDispatcher,
    config: AppConfig,
  ) {
    // Leave most of the pool to the worker and the rest of the service.
    this.maxInFlight = Math.max(1, Math.floor(config.databasePoolSize / 4));
    this.coalesceWindowMs = config.reconcileCoalesceWindowMs;
  }

  /** Resolves true if the event was stored now, false if its id was already stored; rejects if not stored. */
  store(event: NewPozyEvent): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.queue.push({ event, resolve, reject });
      this.flush();
    });
  }

  private flush(): void {
    while (this.inFlight < this.maxInFlight && this.queue.length > 0) {
      const batch = this.queue.splice(0, MAX_BATCH);
      this.inFlight += 1;
      void this.run(batch).finally(() => {
        this.inFlight -= 1;
        this.flush();
      });
    }
  }

  private async run(batch: Waiting[]): Promise<void> {
    // Deliveries of one event in one batch: the first is the one stored, the others are its duplicates.
    const first = new Map<string, Waiting>();
    for (const waiting of batch) if (!first.has(waiting.event.id)) first.set(waiting.event.id, waiting);
    try {
      const outcome = await this.events.insertBatch(
        [...first.values()].map((w) => w.event),
        this.coalesceWindowMs,
      );
      if (outcome.firstRequestDueAt) this.dispatcher.nudge(outcome.firstRequestDueAt);
      for (const waiting of batch) {
        waiting.resolve(first.get(waiting.event.id) === waiting && outcome.insertedIds.has(waiting.event.id));
      }
    } catch (error) {
      if (first.size === 1) {
        for (const waiting of batch) waiting.reject(error);
        return;
      }
      this.logger.warn(`A batch of ${first.size} events failed (${(error as Error).message}); storing them one by one`);
      await Promise.all([...first.values()].map((waiting) => this.run(batch.filter((w) => w.event.id === waiting.event.id))));
    }
  }
}
