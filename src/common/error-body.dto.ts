import { ApiProperty, ApiPropertyOptional, ApiResponse, ApiSchema } from '@nestjs/swagger';
import type { ErrorBody } from './api-error';

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

/** Documents one error answer of an endpoint (or of every endpoint of a controller) with the shared error body. */
export const ApiErrorResponse = (status: number, description: string): MethodDecorator & ClassDecorator =>
  ApiResponse({ status, description, type: ErrorBodyDto });

/** The 400 every endpoint with validated query, path or body parameters can answer. */
export const ApiInvalidRequestResponse = (what = 'A query or path parameter'): MethodDecorator & ClassDecorator =>
  ApiErrorResponse(400, `\`invalid_request\`: ${what} is bad, unknown or missing; \`details\` names each field.`);

/** The 400 of the mirror's list endpoints (a bad parameter, or a bad cursor). */
export const BAD_QUERY =
  '`invalid_request`: a query parameter is bad or unknown; `details` names each. `invalid_query`: `cursor` is not one this service returned.';

/** A 404 for an id the service does not know. */
export const ApiNotFoundErrorResponse = (what: string): MethodDecorator & ClassDecorator => ApiErrorResponse(404, `\`not_found\`: ${what}.`);
