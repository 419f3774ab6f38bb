import { Injectable, Logger } from '@nestjs/common';
import { ApiError } from '../common/api-error';
import { AppConfig } from '../config/app-config';
import { AckSpool } from './ack-spool';
import { isEventDataError } from './event-data-error';
import { eventKey, NewPozyEvent, PozyEventRepository } from './pozy-event.repository';
import { ReconcileSignal } from './reconcile-signal';

/** Events per statement at most. */
const MAX_BATCH = 200;
/** Deliveries waiting for a statement at most; past it the receiver sheds load (503) instead of growing. */
const MAX_WAITING = 10_000;

/** `spooled`: the database did not acknowledge in time; the event is safe in the local spool. */
export type StoreOutcome = 'stored' | 'duplicate' | 'spooled';

interface Waiting {
  event: NewPozyEvent;
  resolve: (outcome: StoreOutcome) => void;
  reject: (error: unknown) => void;
}

/**
 * Stores accepted events, grouping the deliveries that arrive while an earlier insert is in flight into one
 * statement (group commit): under load, one round trip and one commit serve many webhooks; when idle, an event
 * goes alone at once. Each caller is answered only after the statement holding its event has committed. A batch
 * that fails on one event's data is retried event by event, so one bad event cannot fail its neighbours.
 * One statement at a time, unless a whole batch is waiting: every statement and commit costs both processes about
 * as much as a dozen events in it, so fewer, larger statements carry more deliveries a second (docs/performance.md).
 */
@Injectable()
export class EventIngester {
  private readonly logger = new Logger(EventIngester.name);
  private readonly maxInFlight: number;
  private readonly coalesceWindowMs: number;
  private readonly ackTimeoutMs: number;
  private queue: Waiting[] = [];
  private inFlight = 0;

  constructor(
    private readonly events: PozyEventRepository,
    private readonly reconcileSignal: ReconcileSignal,
    private readonly spool: AckSpool,
    config: AppConfig,
  ) {
    // Leave most of the pool to the worker and the rest of the service (a backlog of whole batches at most).
    this.maxInFlight = Math.max(1, Math.floor(config.databasePoolSize / 4));
    this.coalesceWindowMs = config.reconcileCoalesceWindowMs;
    this.ackTimeoutMs = config.ackTimeoutMs;
  }

  /** Resolves once the event is safe (in the database or the spool); rejects if it is neither. */
  store(event: NewPozyEvent): Promise<StoreOutcome> {
    if (this.queue.length >= MAX_WAITING) {
      return Promise.reject(new ApiError('overloaded', 'Too many webhooks waiting for the database; retry later'));
    }
    return new Promise((resolve, reject) => {
      this.queue.push({ event, resolve, reject });
      this.flush();
    });
  }

  private flush(): void {
    while (this.queue.length > 0 && (this.inFlight === 0 || (this.inFlight < this.maxInFlight && this.queue.length >= MAX_BATCH))) {
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
    const groups = new Map<string, Waiting[]>();
    for (const waiting of batch) {
      const key = eventKey(waiting.event);
      groups.set(key, [...(groups.get(key) ?? []), waiting]);
    }
    try {
      await this.insert([...groups.values()]);
    } catch (error) {
      if (groups.size > 1 && isEventDataError(error)) {
        this.logger.warn(`A batch of ${groups.size} events failed on one's data (${(error as Error).message}); storing them one by one`);
        // In this slot, one at a time: a rare path, and it must not take more connections than the batch did.
        const rest = [...groups.values()];
        for (let i = 0; i < rest.length; i += 1) {
          try {
            await this.insert([rest[i]]);
          } catch (e) {
            if (isEventDataError(e)) {
              this.fail([rest[i]], e);
              continue;
            }
            // The database itself failed: the rest goes to the spool now, not one deadline at a time.
            this.fail(rest.slice(i), e);
            break;
          }
        }
      } else {
        this.fail([...groups.values()], error);
      }
    }
  }

  /**
   * Past the deadline (the insert's own) the events are answered from the spool and the slot is freed: answering
   * Pozy within 5 s comes first.
   */
  private async insert(groups: Waiting[][]): Promise<void> {
    const outcome = await this.events.insertBatch(
      groups.map((group) => group[0].event),
      this.coalesceWindowMs,
      this.ackTimeoutMs,
      groups.map((group) => group.length),
    );
    if (outcome.firstRequestDueAt) this.reconcileSignal.requested(outcome.firstRequestDueAt);
    for (const group of groups) {
      const inserted = outcome.inserted.has(eventKey(group[0].event));
      group.forEach((waiting, i) => waiting.resolve(inserted && i === 0 ? 'stored' : 'duplicate'));
    }
  }

  /**
   * The event's own data is at fault: refused (400). Anything else is the database not acknowledging: the events
   * go to the local spool and are answered as accepted. Only if the spool fails too is the delivery refused.
   */
  private fail(groups: Waiting[][], error: unknown): void {
    const waiting = groups.flat();
    if (isEventDataError(error)) return rejectAll(waiting, error);
    try {
      this.spool.add(
        groups.map((group) => group[0].event),
        error,
      );
    } catch (spoolError) {
      this.logger.error(`Spooling failed too: ${(spoolError as Error).message}`);
      return rejectAll(waiting, error);
    }
    for (const w of waiting) w.resolve('spooled');
  }
}

function rejectAll(waiting: Waiting[], error: unknown): void {
  for (const w of waiting) w.reject(error);
}
