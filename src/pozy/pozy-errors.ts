import { boundedText } from '../common/bounded-text';

// Messages quote what Pozy answered: bounded, so that no error, dead letter or log line carries a whole answer.

/** Pozy could not be reached, timed out, or answered 5xx on every try: transient, the job retries later. */
export class PozyUnavailableError extends Error {
  constructor(
    message: string,
    /** True when the failures were timeouts or unreachability (what the delivery dead-letter queue counts). */
    readonly network: boolean,
  ) {
    super(boundedText(message));
    this.name = 'PozyUnavailableError';
  }
}

/** Pozy asked us to wait longer than a job should hold a worker: the job retries after `retryAfterMs`. */
export class PozyRateLimitedError extends Error {
  constructor(readonly retryAfterMs: number) {
    super(`Pozy rate limit: retry after ${retryAfterMs} ms`);
    this.name = 'PozyRateLimitedError';
  }
}

/**
 * Pozy answered something we cannot use (an unexpected 4xx, a body that is not the documented shape, or one larger
 * than POZY_MAX_RESPONSE_BYTES).
 */
export class PozyProtocolError extends Error {
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(boundedText(message));
    this.name = 'PozyProtocolError';
  }
}
