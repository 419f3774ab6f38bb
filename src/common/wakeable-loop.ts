import type { Logger } from '@nestjs/common';

export interface WakeableLoopOptions {
  /** One pass; answers when (ms since the epoch) the next pass is wanted, or null for "only when woken or idle". */
  pass: () => Promise<number | null>;
  /** The longest time between two passes, however quiet (Infinity: only when woken or asked for). */
  idleMs: number;
  /** After a failed pass, the next one this much later. */
  retryMs: number;
  logger: Logger;
  /** Names the loop in the warning a failed pass logs, e.g. "Dispatching reconcile requests". */
  what: string;
}

/**
 * A background loop of passes, one at a time: a pass runs when it is due, when woken, or after `idleMs` at the
 * latest. A wake-up during a pass runs another pass right after it, so nothing asked for meanwhile waits for the
 * idle timeout. Only the earliest wanted time is kept: one timer, however many wake-ups.
 */
export class WakeableLoop {
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = true;

  constructor(private readonly options: WakeableLoopOptions) {}

  /** The first pass runs after `delayMs`. */
  start(delayMs = 0): void {
    this.stopped = false;
    this.wakeAt(Date.now() + delayMs);
  }

  /** A pass no later than `at` (ms since the epoch); now if `at` is past. */
  wakeAt(at: number): void {
    if (this.stopped) return;
    if (this.running && at <= Date.now()) {
      this.again = true;
      return;
    }
    if (at >= this.timerAt) return;
    clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(() => this.tick(), Math.max(0, at - Date.now()));
  }

  /** A pass now, or right after the one running. */
  wake(): void {
    this.wakeAt(Date.now());
  }

  /** No pass starts any more; resolves once the one running has ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
    await this.running;
  }

  private tick(): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.again = false;
    this.running = this.options
      .pass()
      .then(
        (next) => Math.min(next ?? Infinity, Date.now() + this.options.idleMs),
        (error: unknown) => {
          this.options.logger.warn(`${this.options.what} failed; retrying: ${error instanceof Error ? error.message : String(error)}`);
          return Date.now() + this.options.retryMs;
        },
      )
      .then((next) => {
        this.running = undefined;
        this.wakeAt(this.again ? Date.now() : next);
      });
  }
}
