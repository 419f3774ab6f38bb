/**
 * A value computed for every caller at once: callers while a computation is in flight share it, and its outcome
 * (the value, or the error) is answered again to whoever asks within `reuseMs` after it settled. So however many
 * callers there are, at most one computation runs at a time, and at most one starts per `reuseMs` plus its own time.
 * An error is reused too: a computation failing because its source is overloaded is not retried by every caller.
 */
export class SharedComputation<T> {
  private inFlight: Promise<T> | undefined;
  private settled: { outcome: Promise<T>; at: number } | undefined;

  constructor(
    private readonly compute: () => Promise<T>,
    private readonly reuseMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  get(): Promise<T> {
    if (this.inFlight) return this.inFlight;
    if (this.settled && this.now() - this.settled.at < this.reuseMs) return this.settled.outcome;
    const outcome = this.start();
    this.inFlight = outcome;
    const settle = () => {
      this.inFlight = undefined;
      this.settled = { outcome, at: this.now() };
    };
    outcome.then(settle, settle);
    return outcome;
  }

  /** async: a computation that throws before its first await rejects like any other. */
  private async start(): Promise<T> {
    return this.compute();
  }
}

/**
 * Computations by key, shared by the callers that ask for the same key while it is in flight; nothing is kept once it
 * settles, so a caller never gets an answer computed before a computation it could have started itself had finished.
 */
export class SharedInFlight<T> {
  private readonly inFlight = new Map<string, Promise<T>>();

  get(key: string, compute: () => Promise<T>): Promise<T> {
    const running = this.inFlight.get(key);
    if (running) return running;
    const outcome = (async () => compute())();
    this.inFlight.set(key, outcome);
    const forget = () => this.inFlight.delete(key);
    outcome.then(forget, forget);
    return outcome;
  }
}
