import { validateSync, ValidationError, ValidatorOptions } from 'class-validator';
import { ApiError } from './api-error';

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
  /** The error code of the 4xx answer, e.g. `invalid_event`. */
  code: string;
  /** What is being validated, for the message: "Invalid <what>: ...". */
  what: string;
  status?: number;
  validator?: ValidatorOptions;
}

export const isJsonObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Validates a DTO instance, or throws a 4xx ApiError listing every bad field. */
export function validateInstance<T extends object>(instance: T, options: ValidationOptions): T {
  const errors = validateSync(instance, { forbidUnknownValues: true, ...options.validator });
  if (errors.length > 0) throw validationFailed(errors, options);
  return instance;
}

/** The 4xx for failed validation, naming every bad field (also what the global ValidationPipe throws). */
export function validationFailed(errors: ValidationError[], options: ValidationOptions): ApiError {
  const problems = flatten(errors);
  const summary = problems.map((p) => `${p.field}: ${p.problems.join(', ')}`).join('; ');
  return new ApiError(options.status ?? 400, options.code, `Invalid ${options.what}: ${summary}`, problems);
}
