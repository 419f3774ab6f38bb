import { ErrorCode, statusOf } from './error-codes';

/** An error answered as JSON naming the problem: its code (error-codes.ts) brings its HTTP status. */
export class ApiError extends Error {
  /** The code's status, from ERROR_CODES. */
  readonly status: number;

  constructor(
    /** Stable, machine-readable name of the problem, e.g. `invalid_signature`. */
    readonly code: ErrorCode,
    message: string,
    readonly details?: unknown,
    /** Sent as `Retry-After` (seconds): when the client may try again, on a 429 or a 503. */
    readonly retryAfterS?: number,
  ) {
    super(message);
    this.status = statusOf(code);
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

/** The body of an answer with one of the registry's codes, its status from the registry. */
export const errorBody = (code: ErrorCode, message: string): ErrorBody => ({ statusCode: statusOf(code), error: code, message });
