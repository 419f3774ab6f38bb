import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional, ApiResponse, ApiSchema } from '@nestjs/swagger';
import type { ErrorBody } from './api-error';
import { ERROR_CODES, ErrorCode, statusOf } from './error-codes';

/** The body of every error answer (see ErrorBody and error-response.ts): the one error schema of the document. */
@ApiSchema({ name: 'ErrorBody', description: 'The body of every error answer.' })
export class ErrorBodyDto implements ErrorBody {
  @ApiProperty({ description: 'The HTTP status, repeated.', type: 'integer', example: 400 })
  statusCode!: number;

  @ApiProperty({ description: 'Stable, machine-readable name of the problem.', example: 'invalid_request' })
  error!: string;

  @ApiProperty({ description: 'What went wrong, for people.', example: 'Invalid request: limit: limit must not be greater than 500' })
  message!: string;

  @ApiPropertyOptional({
    description: 'More about the problem when there is more: for validation failures, every bad field with its problems.',
    oneOf: [
      { type: 'array', items: {} },
      { type: 'object', additionalProperties: true },
    ],
    example: [{ field: 'limit', problems: ['limit must not be greater than 500'] }],
  })
  details?: unknown;
}

/**
 * The error codes an endpoint (or every endpoint of a controller) can answer, each with what it means there, or `true`
 * for its meaning in ERROR_CODES. One response per status, the status of each code being the registry's.
 */
export type ErrorCodesAnswered = Partial<Record<ErrorCode, string | true>>;

/** The description of one status's codes: "`code`: what it means here." each. */
export function describeCodes(codes: ErrorCodesAnswered): string {
  return (Object.entries(codes) as [ErrorCode, string | true][])
    .map(([code, meaning]) => `\`${code}\`: ${meaning === true ? ERROR_CODES[code].meaning : meaning}.`)
    .join(' ');
}

/** Documents the error answers of an endpoint (or of every endpoint of a controller) with the shared error body. */
export const ApiErrorResponse = (codes: ErrorCodesAnswered): MethodDecorator & ClassDecorator => {
  const byStatus = new Map<number, ErrorCodesAnswered>();
  for (const [code, meaning] of Object.entries(codes) as [ErrorCode, string | true][]) {
    const status = statusOf(code);
    byStatus.set(status, { ...byStatus.get(status), [code]: meaning });
  }
  return applyDecorators(
    ...[...byStatus].map(([status, answered]) => ApiResponse({ status, description: describeCodes(answered), type: ErrorBodyDto })),
  );
};

/** The 400 every endpoint with validated query, path or body parameters can answer. */
export const ApiInvalidRequestResponse = (what = 'A query or path parameter'): MethodDecorator & ClassDecorator =>
  ApiErrorResponse({ invalid_request: `${what} is bad, unknown or missing; \`details\` names each field` });

/** The 400 of the mirror's list endpoints (a bad parameter, or a bad cursor). */
export const BAD_QUERY: ErrorCodesAnswered = {
  invalid_request: 'a query parameter is bad or unknown; `details` names each',
  invalid_query: '`cursor` is not one this service returned',
};

/** A 404 for an id the service does not know. */
export const ApiNotFoundErrorResponse = (what: string): MethodDecorator & ClassDecorator => ApiErrorResponse({ not_found: what });
