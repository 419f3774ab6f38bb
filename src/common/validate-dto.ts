import { validateSync, ValidationError, ValidatorOptions } from 'class-validator';
import { ApiError } from './api-error';
import { ErrorCode } from './error-codes';

export interface FieldProblem {
  field: string;
  problems: string[];
}

function flatten(errors: ValidationError[], prefix = ''): FieldProblem[] {
  return errors.flatMap((error) => {
    const field = prefix ? `${prefix}.${error.property}` : error.property;
    const own = error.constraints ? [{ field, problems: Object.values(error.constraints) }] : [];
    return [...own, ...flatten(error.children ?? [], field)];
  });
}

export interface ValidationOptions {
  /** The error code of the 4xx answer, e.g. `invalid_event` (its status comes with it). */
  code: ErrorCode;
  /** What is being validated, for the message: "Invalid <what>: ...". */
  what: string;
  validator?: ValidatorOptions;
}

/**
 * A hand-written check of a DTO's common case, for a path that validates on every request (a webhook's envelope and
 * headers): what it accepts, the DTO's decorators accept too; what it does not accept goes through class-validator,
 * which accepts it after all or names the problem exactly as before. Each check's spec holds it to that, over
 * arbitrary values.
 */
export type QuickCheck<T> = (instance: T) => boolean;

/**
 * A string of 1 to `max` UTF-16 units: `@IsString() @IsNotEmpty() @MaxLength(max)` accepts it (MaxLength counts a
 * surrogate pair as one character, so never more than this).
 */
export const isText = (value: unknown, max: number): value is string => typeof value === 'string' && value.length > 0 && value.length <= max;

export const isJsonObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Validates a DTO instance, or throws a 4xx ApiError listing every bad field. With `quick`, an instance it accepts is
 * not given to class-validator (whose metadata walk costs about a tenth of a webhook's CPU).
 */
export function validateInstance<T extends object>(instance: T, options: ValidationOptions, quick?: QuickCheck<T>): T {
  if (quick?.(instance)) return instance;
  const errors = validateSync(instance, { forbidUnknownValues: true, ...options.validator });
  if (errors.length > 0) throw validationFailed(errors, options);
  return instance;
}

/** The 4xx for failed validation, naming every bad field (also what the global ValidationPipe throws). */
export function validationFailed(errors: ValidationError[], options: ValidationOptions): ApiError {
  const problems = flatten(errors);
  const summary = problems.map((p) => `${p.field}: ${p.problems.join(', ')}`).join('; ');
  return new ApiError(options.code, `Invalid ${options.what}: ${summary}`, problems);
}
