import {
  BadRequestException,
  HttpException,
  HttpStatus,
  InternalServerErrorException,
  NotFoundException,
  PayloadTooLargeException,
  ServiceUnavailableException,
  UnsupportedMediaTypeException,
} from '@nestjs/common';
import { IsInt, IsString, Min, ValidateNested } from 'class-validator';
import { plainToInstance, Type } from 'class-transformer';
import { ApiError } from './api-error';
import { toErrorResponse } from './error-response';
import { validateInstance } from './validate-dto';

describe('toErrorResponse: what a thrown error answers', () => {
  it('answers an ApiError with its status, its code as `error`, its message and its details', () => {
    const details = [{ field: 'limit', problems: ['limit must not be greater than 500'] }];

    expect(toErrorResponse(new ApiError('invalid_query', 'limit is too large', details))).toEqual({
      status: 400,
      body: { statusCode: 400, error: 'invalid_query', message: 'limit is too large', details },
      unexpected: false,
    });
  });

  it('keeps an ApiError 5xx the service chose (e.g. 503 overloaded) expected: nothing to log as a bug', () => {
    const { status, body, unexpected } = toErrorResponse(new ApiError('overloaded', 'retry later'));

    expect({ status, error: body.error, unexpected }).toEqual({ status: 503, error: 'overloaded', unexpected: false });
  });

  it.each([
    [new PayloadTooLargeException('Request body is too large'), 413, 'payload_too_large', 'Request body is too large'],
    [new UnsupportedMediaTypeException('Unsupported Media Type: text/plain'), 415, 'unsupported_media_type', 'Unsupported Media Type: text/plain'],
    [new NotFoundException('Cannot GET /nowhere'), 404, 'not_found', 'Cannot GET /nowhere'],
    [new BadRequestException(), 400, 'bad_request', 'Bad Request'],
    [new HttpException('I am a teapot', 418), 418, 'i_am_a_teapot', 'I am a teapot'],
  ])('answers a Nest/Fastify HttpException with its status and the status name in snake case (%#)', (error, status, code, message) => {
    expect(toErrorResponse(error)).toEqual({ status, body: { statusCode: status, error: code, message }, unexpected: false });
  });

  it('joins a list of messages (a validation pipe) into one', () => {
    const { body } = toErrorResponse(new BadRequestException(['limit must be an integer', 'cursor must be a string']));

    expect(body.message).toBe('limit must be an integer; cursor must be a string');
  });

  it('names a status Nest has no name for `error`', () => {
    const { status, body } = toErrorResponse(new HttpException('odd', 599));

    expect(HttpStatus[599]).toBeUndefined();
    expect({ status, error: body.error }).toEqual({ status: 599, error: 'error' });
  });

  it('flags an HttpException of 500 or above as unexpected, so it is logged', () => {
    expect(toErrorResponse(new InternalServerErrorException()).unexpected).toBe(true);
    expect(toErrorResponse(new ServiceUnavailableException()).unexpected).toBe(true);
  });

  it.each([
    ['an Error', new Error('relation "post" does not exist at character 15')],
    ['a TypeError', new TypeError("Cannot read properties of undefined (reading 'id')")],
    ['a thrown string', 'connection terminated'],
    ['undefined', undefined],
  ])('answers anything else (%s) with a bare 500 that says nothing of the internals', (_what, error) => {
    const answer = toErrorResponse(error);

    expect(answer).toEqual({
      status: 500,
      body: { statusCode: 500, error: 'internal_error', message: 'Internal server error' },
      unexpected: true,
    });
    expect(JSON.stringify(answer.body)).not.toMatch(/relation|undefined|connection/);
  });
});

class Window {
  @IsInt()
  @Min(1)
  minutes!: number;
}

class Query {
  @IsString()
  name!: string;

  @ValidateNested()
  @Type(() => Window)
  window!: Window;
}

describe('validateInstance: the 400 a failed validation throws', () => {
  it('passes a valid instance through', () => {
    const query = plainToInstance(Query, { name: 'x', window: { minutes: 5 } });

    expect(validateInstance(query, { code: 'invalid_query', what: 'query' })).toBe(query);
  });

  it('names every bad field, nested ones by their path, under the code asked for', () => {
    const query = plainToInstance(Query, { name: 7, window: { minutes: 0 } });

    let thrown: unknown;
    try {
      validateInstance(query, { code: 'invalid_query', what: 'query' });
    } catch (error) {
      thrown = error;
    }

    expect(thrown).toBeInstanceOf(ApiError);
    const { status, body } = toErrorResponse(thrown);
    expect(status).toBe(400);
    expect(body.error).toBe('invalid_query');
    expect(body.message).toBe('Invalid query: name: name must be a string; window.minutes: minutes must not be less than 1');
    expect(body.details).toEqual([
      { field: 'name', problems: ['name must be a string'] },
      { field: 'window.minutes', problems: ['minutes must not be less than 1'] },
    ]);
  });

  it("answers with the status of the code asked for (the registry's)", () => {
    const query = plainToInstance(Query, { name: 'x', window: { minutes: -1 } });

    let thrown: unknown;
    try {
      validateInstance(query, { code: 'unstorable_event', what: 'body' });
    } catch (error) {
      thrown = error;
    }

    expect(thrown).toMatchObject({ status: 422, code: 'unstorable_event' });
  });
});

describe('toErrorResponse for a database that had no connection to give', () => {
  it.each([
    new Error('timeout exceeded when trying to connect'),
    new Error('Connection terminated due to connection timeout'),
    Object.assign(new Error('sorry, too many clients already'), { code: '53300' }),
  ])('answers %p as 503 overloaded with Retry-After, not a 500', (error) => {
    expect(toErrorResponse(error)).toEqual({
      status: 503,
      body: { statusCode: 503, error: 'overloaded', message: 'No database connection came free in time; retry shortly' },
      unexpected: false,
      retryAfterS: 1,
    });
  });

  it('still answers any other failure as a 500 that says nothing of it', () => {
    expect(toErrorResponse(Object.assign(new Error('relation "post" does not exist'), { code: '42P01' }))).toMatchObject({
      status: 500,
      unexpected: true,
    });
  });
});
