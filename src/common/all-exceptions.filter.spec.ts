import { ArgumentsHost, Logger, PayloadTooLargeException } from '@nestjs/common';
import { AllExceptionsFilter } from './all-exceptions.filter';
import { ApiError } from './api-error';

/** The HTTP context the filter reads: Fastify's request (its id) and reply (its socket, status, headers, then send). */
function host(requestId = 'req-7', routeHeaders: Record<string, string> = {}, socket = { destroyed: false }) {
  const sent: { status?: number; body?: unknown } = {};
  const headers = { ...routeHeaders };
  const reply = {
    raw: { socket },
    status(code: number) {
      sent.status = code;
      return reply;
    },
    header(name: string, value: string) {
      headers[name] = value;
      return reply;
    },
    send(body: unknown) {
      sent.body = body;
      return reply;
    },
  };
  const context = { getRequest: () => ({ id: requestId }), getResponse: () => reply };
  return { host: { switchToHttp: () => context } as unknown as ArgumentsHost, sent, headers };
}

describe('AllExceptionsFilter', () => {
  let errors: jest.SpyInstance;

  beforeEach(() => {
    errors = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
  });

  afterEach(() => errors.mockRestore());

  it('answers a client error with its status and JSON body, and logs nothing', () => {
    const { host: h, sent } = host();

    new AllExceptionsFilter().catch(new ApiError('invalid_signature', 'X-Pozy-Signature does not match the body'), h);

    expect(sent).toEqual({
      status: 401,
      body: { statusCode: 401, error: 'invalid_signature', message: 'X-Pozy-Signature does not match the body', details: undefined },
    });
    expect(errors).not.toHaveBeenCalled();
  });

  it('answers JSON on a route whose own answer is another type (GET /metrics: text/plain)', () => {
    const { host: h, sent, headers } = host('req-8', { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' });

    new AllExceptionsFilter().catch(new ApiError('status_timeout', 'Reading the status figures took too long'), h);

    expect(sent.status).toBe(503);
    expect(headers['content-type']).toBe('application/json; charset=utf-8');
  });

  it('sends Retry-After with an error that says when to come back (a 503 of too much load)', () => {
    const { host: h, sent, headers } = host();

    new AllExceptionsFilter().catch(new ApiError('overloaded', 'retry later', undefined, 2), h);

    expect(sent).toEqual({ status: 503, body: { statusCode: 503, error: 'overloaded', message: 'retry later', details: undefined } });
    expect(headers['Retry-After']).toBe('2');
    expect(errors).not.toHaveBeenCalled();
  });

  it('answers a framework error (a body over the limit) as its HttpException says', () => {
    const { host: h, sent } = host();

    new AllExceptionsFilter().catch(new PayloadTooLargeException('Request body is too large'), h);

    expect(sent).toEqual({ status: 413, body: { statusCode: 413, error: 'payload_too_large', message: 'Request body is too large' } });
    expect(errors).not.toHaveBeenCalled();
  });

  it('answers a bug with a bare 500, and logs its stack with the request id for the operator', () => {
    const { host: h, sent } = host('req-42');
    const bug = new TypeError("Cannot read properties of undefined (reading 'id')");

    new AllExceptionsFilter().catch(bug, h);

    expect(sent).toEqual({ status: 500, body: { statusCode: 500, error: 'internal_error', message: 'Internal server error' } });
    expect(errors).toHaveBeenCalledTimes(1);
    expect(errors).toHaveBeenCalledWith({ msg: bug.stack, requestId: 'req-42' });
  });

  it('answers nothing and logs nothing when the client closed the connection mid-request', () => {
    const { host: h, sent } = host('req-9', {}, { destroyed: true });

    new AllExceptionsFilter().catch(Object.assign(new Error('aborted'), { code: 'ECONNRESET' }), h);

    expect(sent).toEqual({});
    expect(errors).not.toHaveBeenCalled();
  });

  it('logs a thrown non-Error as text', () => {
    const { host: h } = host();

    new AllExceptionsFilter().catch('connection terminated', h);

    expect(errors).toHaveBeenCalledWith({ msg: 'connection terminated', requestId: 'req-7' });
  });
});
