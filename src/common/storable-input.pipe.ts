import { ArgumentMetadata, Injectable, PipeTransform } from '@nestjs/common';
import { ApiError } from './api-error';
import { findUnstorable } from './storable-text';

/** Query strings, path parameters and the admin endpoints' JSON bodies are flat; nothing legitimate nests this deep. */
const MAX_INPUT_DEPTH = 32;

/**
 * The global pipe step before validation: a query parameter, path parameter or body field holding text PostgreSQL
 * cannot store (see storable-text.ts) is a 400 naming it, on every endpoint, the DTOs' own rules aside.
 */
@Injectable()
export class StorableInputPipe implements PipeTransform {
  transform(value: unknown, metadata: ArgumentMetadata): unknown {
    // Headers and the like (`custom`) are not stored; the webhook's body is raw bytes, checked by the receiver.
    if (metadata.type === 'custom') return value;
    const found = findUnstorable(value, metadata.data ?? '', MAX_INPUT_DEPTH);
    if (!found) return value;
    const problem = `${found.field} ${found.problem}`;
    throw new ApiError('invalid_request', `Invalid request: ${found.field}: ${problem}`, [{ field: found.field, problems: [problem] }]);
  }
}
