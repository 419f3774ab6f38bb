import { HttpException, HttpStatus } from '@nestjs/common';
import { ApiError, ErrorBody, errorBody } from './api-error';
import { statusOf } from './error-codes';
import { isNoConnection } from './database-errors';

const snake = (text: string) =>
  text
    .trim()
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_|_$/g, '');

/**
 * The one mapping from anything thrown to an HTTP answer (Nest hands Fastify's own request errors, such as a body
 * too large, to the exception filter as HttpExceptions). Unknown errors are 500s that say nothing about internals.
 */
export function toErrorResponse(error: unknown): { status: number; body: ErrorBody; unexpected: boolean; retryAfterS?: number } {
  if (error instanceof ApiError) {
    return {
      status: error.status,
      body: { statusCode: error.status, error: error.code, message: error.message, details: error.details },
      unexpected: false,
      ...(error.retryAfterS !== undefined ? { retryAfterS: error.retryAfterS } : {}),
    };
  }
  if (error instanceof HttpException) {
    const status = error.getStatus();
    const response = error.getResponse();
    const detail = typeof response === 'string' ? response : (response as { message?: unknown }).message;
    const message = Array.isArray(detail) ? detail.join('; ') : typeof detail === 'string' ? detail : error.message;
    return {
      status,
      body: { statusCode: status, error: snake(HttpStatus[status] ?? 'error'), message },
      unexpected: status >= 500,
    };
  }
  // Every connection busy, wherever it was wanted: the request may succeed shortly, and the service is not broken.
  if (isNoConnection(error)) {
    return {
      status: statusOf('overloaded'),
      body: errorBody('overloaded', 'No database connection came free in time; retry shortly'),
      unexpected: false,
      retryAfterS: 1,
    };
  }
  return {
    status: statusOf('internal_error'),
    body: errorBody('internal_error', 'Internal server error'),
    unexpected: true,
  };
}
