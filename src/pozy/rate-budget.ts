/**
 * A token bucket shared by every caller in this process: at most `perMinute` requests a minute, spread evenly,
 * with bursts of up to a tenth of that. Callers wait for a token rather than being refused.
 */
export class RateBudget {
  private tokens: number;
  private updatedAt = Date.now();
  private readonly capacity: number;
  private readonly perMs: number;
  private queue: Promise<void> = Promise.resolve();

  constructor(perMinute: number) {
    this.capacity = Math.max(1, Math.floor(perMinute / 10));
    this.perMs = perMinute / 60_000;
    this.tokens = this.capacity;
  }

  /** Pozy answered 429: nobody sends for `ms` (the bucket is emptied and refills from then on). */
  holdFor(ms: number): void {
    const now = Date.now();
    this.tokens = Math.min(this.tokens, 0);
    this.updatedAt = Math.max(this.updatedAt, now + ms);
  }

  /** Resolves when the caller may send one request; callers are served in arrival order. */
  take(): Promise<void> {
    const turn = this.queue.then(() => this.waitForToken());
    this.queue = turn;
    return turn;
  }

  private async waitForToken(): Promise<void> {
    for (;;) {
      const now = Date.now();
      if (now < this.updatedAt) {
        // Held after a 429.
        await new Promise((resolve) => setTimeout(resolve, this.updatedAt - now));
        continue;
      }
      this.tokens = Math.min(this.capacity, this.tokens + (now - this.updatedAt) * this.perMs);
      this.updatedAt = now;
      if (this.tokens >= 1) {
        this.tokens -= 1;
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, Math.ceil((1 - this.tokens) / this.perMs)));
    }
  }
}
