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

/** Turns plain input into a validated DTO instance, or throws a 4xx ApiError listing every bad field. */
export function validateDto<T extends object>(
  cls: ClassConstructor<T>,
  plain: unknown,
  options: { code: string; what: string; status?: number; transform?: ClassTransformOptions; validator?: ValidatorOptions },
): T {
  if (typeof plain !== 'object' || plain === null || Array.isArray(plain)) {
    throw new ApiError(options.status ?? 400, options.code, `${options.what} must be a JSON object`);
  }
  const instance = plainToInstance(cls, plain, options.transform);
  const problems = flatten(validateSync(instance, { forbidUnknownValues: true, ...options.validator }));
  if (problems.length > 0) {
    const summary = problems.map((p) => `${p.field}: ${p.problems.join(', ')}`).join('; ');
    throw new ApiError(options.status ?? 400, options.code, `Invalid ${options.what}: ${summary}`, problems);
  }
  return instance;
}
