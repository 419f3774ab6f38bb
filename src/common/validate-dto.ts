import { ClassConstructor, ClassTransformOptions, plainToInstance } from 'class-transformer';
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

/** Turns plain input into a validated DTO instance, or throws a 4xx ApiError listing every bad field. */
export function validateDto<T extends object>(
  cls: ClassConstructor<T>,
  plain: unknown,
  options: ValidationOptions & { transform?: ClassTransformOptions },
): T {
  if (!isJsonObject(plain)) {
    throw new ApiError(options.status ?? 400, options.code, `${options.what} must be a JSON object`);
  }
  return validateInstance(plainToInstance(cls, plain, options.transform), options);
}

/** Validates a DTO instance built by hand (on hot paths, where a deep plainToInstance would be waste). */
export function validateInstance<T extends object>(instance: T, options: ValidationOptions): T {
  const problems = flatten(validateSync(instance, { forbidUnknownValues: true, ...options.validator }));
  if (problems.length > 0) {
    const summary = problems.map((p) => `${p.field}: ${p.problems.join(', ')}`).join('; ');
    throw new ApiError(options.status ?? 400, options.code, `Invalid ${options.what}: ${summary}`, problems);
  }
  return instance;
}
