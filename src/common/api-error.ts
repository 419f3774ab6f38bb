/** An error the client caused and can correct: it becomes a 4xx JSON answer naming the problem. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    /** Stable, machine-readable name of the problem, e.g. `invalid_signature`. */
    readonly code: string,
    message: string,
    readonly details?: unknown,
    /** Sent as `Retry-After` (seconds): when the client may try again, on a 429 or a 503. */
    readonly retryAfterS?: number,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** The body of every error answer. */
export interface ErrorBody {
  statusCode: number;
  error: string;
  message: string;
  details?: unknown;
}
