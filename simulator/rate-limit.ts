/**
 * A workspace's rate limit: at most `limit` requests in any sliding window (a minute at Pozy), counted per API key,
 * so another client of the same key (the team's own product) spends the same budget.
 */

/** The other client's requests are taken on a timer this often at most, as many at a time as are due. */
const OTHER_CLIENT_TICK_MS = 10;
/** Accepted request times kept: past twice this, the older half is forgotten (a long-running simulator). */
const ACCEPTED_KEPT = 1_000_000;

export interface RateLimitStats {
  /** Authenticated requests answered 429 because the window was full (injected 429 faults are not counted). */
  rateLimited: number;
  /** The other client of the key: requests per window, and its requests the window took or refused. */
  otherClient: { perWindow: number; accepted: number; refused: number };
}

/** The last `limit` accepted request times; a request is accepted while fewer than `limit` fall in the last window. */
export class SlidingWindow {
  private times: number[] = [];
  private head = 0;

  constructor(
    readonly limit: number,
    readonly windowMs: number,
  ) {}

  used(now: number): number {
    while (this.head < this.times.length && this.times[this.head] <= now - this.windowMs) this.head += 1;
    if (this.head > 1024 && this.head * 2 > this.times.length) {
      this.times = this.times.slice(this.head);
      this.head = 0;
    }
    return this.times.length - this.head;
  }

  take(now: number): boolean {
    if (this.used(now) >= this.limit) return false;
    this.times.push(now);
    return true;
  }

  /** When the oldest counted request leaves the window (ms), or now when none is counted. */
  nextFree(now: number): number {
    return this.used(now) === 0 ? now : this.times[this.head] + this.windowMs;
  }
}

/**
 * The API key's budget: one sliding window shared by pozy-sync's requests and another client's, which spends
 * `perWindow` requests spread evenly over each window. The other client's requests are only slots taken (or
 * refused when the window is full: it never waits), not HTTP requests.
 */
export class RateLimiter {
  readonly window: SlidingWindow;
  /** When each request of pozy-sync's that the window took arrived (ms), oldest first. */
  private accepted: number[] = [];
  private rateLimited = 0;
  private readonly other = { perWindow: 0, accepted: 0, refused: 0 };
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(limit: number, windowMs: number, otherPerWindow: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError('rateLimitPerMinute must be a positive integer');
    if (!Number.isInteger(windowMs) || windowMs < 1) throw new RangeError('rateLimitWindowMs must be a positive integer');
    this.window = new SlidingWindow(limit, windowMs);
    this.setOtherClient(otherPerWindow);
  }

  /** A request of pozy-sync's arriving at `now`: true when the window takes it. */
  admit(now: number): boolean {
    if (!this.window.take(now)) {
      this.rateLimited += 1;
      return false;
    }
    if (this.accepted.length >= 2 * ACCEPTED_KEPT) this.accepted = this.accepted.slice(ACCEPTED_KEPT);
    this.accepted.push(now);
    return true;
  }

  acceptedAt(): number[] {
    return [...this.accepted];
  }

  /** The most of pozy-sync's accepted requests that fell within any `windowMs` (half-open, as the limit counts). */
  mostAcceptedInWindow(windowMs: number): number {
    let most = 0;
    for (let first = 0, last = 0; last < this.accepted.length; last++) {
      while (this.accepted[first] <= this.accepted[last] - windowMs) first += 1;
      most = Math.max(most, last - first + 1);
    }
    return most;
  }

  stats(): RateLimitStats {
    return { rateLimited: this.rateLimited, otherClient: { ...this.other } };
  }

  /** From now on the other client makes `perWindow` requests per window (0: none). */
  setOtherClient(perWindow: number): void {
    if (!Number.isInteger(perWindow) || perWindow < 0) throw new RangeError('otherClientPerMinute must be a non-negative integer');
    clearInterval(this.timer);
    this.timer = undefined;
    this.other.perWindow = perWindow;
    if (perWindow === 0 || this.closed) return;
    const windowMs = this.window.windowMs;
    const startedAt = Date.now();
    let made = 0;
    // As many requests as are due by the clock, so a late timer does not slow the client down; after a stall
    // longer than a window, only a window's worth are made up.
    this.timer = setInterval(
      () => {
        const now = Date.now();
        const due = Math.floor(((now - startedAt) * perWindow) / windowMs);
        made = Math.max(made, due - perWindow);
        for (; made < due; made++) {
          if (this.window.take(now)) this.other.accepted += 1;
          else this.other.refused += 1;
        }
      },
      Math.max(OTHER_CLIENT_TICK_MS, windowMs / perWindow),
    ).unref();
  }

  close(): void {
    this.closed = true;
    clearInterval(this.timer);
    this.timer = undefined;
  }
}
