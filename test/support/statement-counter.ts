import { Client } from 'pg';

/**
 * Counts the statements this process sends to PostgreSQL (every pg client's `query`: Kysely, Prisma's adapter,
 * graphile-worker and the listener all go through it), to show what a load costs the database. The service runs in
 * the test's process, so that is the service's traffic, plus whatever the test itself sends meanwhile.
 */
export class StatementCounter {
  private readonly original = Client.prototype.query;
  private count = 0;
  private since = 0;

  /** `matching`: count only the statements whose text it matches (a string, or a query config's `text`). */
  constructor(private readonly matching?: RegExp) {
    const original = this.original;
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const counter = this;
    Client.prototype.query = function (this: Client, ...args: unknown[]) {
      if (counter.counts(args[0])) counter.count += 1;
      return (original as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof Client.prototype.query;
  }

  private counts(statement: unknown): boolean {
    if (!this.matching) return true;
    const text = typeof statement === 'string' ? statement : (statement as { text?: unknown } | null)?.text;
    return typeof text === 'string' && this.matching.test(text);
  }

  /** Statements counted since the window started. */
  total(): number {
    return this.count;
  }

  /** Starts a window. */
  start(): void {
    this.count = 0;
    this.since = performance.now();
  }

  /** Statements a second since the window started. */
  rate(): number {
    return this.count / ((performance.now() - this.since) / 1000);
  }

  stop(): void {
    Client.prototype.query = this.original;
  }
}
