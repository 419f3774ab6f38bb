import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { errorBody, type ErrorBody } from '../common/api-error';

/**
 * Fastify's own refusals, which never reach Nest's exception filter, answered in the service's one error shape
 * (`{ statusCode, error, message }`, see common/error-response.ts) instead of Fastify's.
 */

const snake = (status: number) => (STATUS_CODES[status] ?? 'error').toLowerCase().replace(/[^a-z0-9]+/g, '_');

/** `frameworkErrors`: a URL whose %-escapes do not decode, a path parameter too long (the router's refusals). */
export function answerFrameworkError(error: FastifyError, _request: FastifyRequest, reply: FastifyReply): void {
  const status = error.statusCode ?? 400;
  const body: ErrorBody =
    error.code === 'FST_ERR_BAD_URL'
      ? errorBody('invalid_url', 'The URL is not valid: a %-escape in its path does not decode to UTF-8')
      : { statusCode: status, error: snake(status), message: error.message };
  void reply.code(body.statusCode).send(body);
}

/**
 * `clientErrorHandler`: what Node's HTTP parser refuses before there is a request (headers over the size limit, a
 * request line that is not HTTP, a client too slow to send its headers). The socket is answered and closed.
 */
export function answerClientError(error: Error & { code?: string }, socket: Duplex): void {
  // A reset connection has no one left to answer.
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, message] =
    error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? [408, 'The request was not received in time']
      : error.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'The request headers exceed the size limit']
        : [400, 'The request is not valid HTTP'];
  const body = JSON.stringify({ statusCode: status, error: snake(status), message } satisfies ErrorBody);
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}

/** While the server closes: 503 in the service's shape (Fastify's own `return503OnClosing` answers in its shape). */
export const SHUTTING_DOWN: ErrorBody = errorBody('shutting_down', 'This replica is shutting down; retry (another replica will answer)');
