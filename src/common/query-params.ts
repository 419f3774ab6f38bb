import { applyDecorators } from '@nestjs/common';
import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { ArrayMinSize, IsArray, IsInt, IsOptional, IsString, Max, Min, MinLength } from 'class-validator';

/** Query strings carry text: `true`/`false` become booleans, anything else stays as is for the validator to name. */
export const BooleanParam = () => Transform(({ value }: { value: unknown }) => (value === 'true' ? true : value === 'false' ? false : value));

export const IntParam = () =>
  Transform(({ value }: { value: unknown }) => (typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value));

/** The optional `limit` of a list endpoint: an integer from 1 to 500, documented with the default the endpoint applies. */
export const LimitParam = (defaultLimit: number, description: string) =>
  applyDecorators(
    ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: 500, default: defaultLimit, description, example: defaultLimit }),
    IsOptional(),
    IntParam(),
    IsInt(),
    Min(1),
    Max(500),
  );

/**
 * An optional list in a query string: comma-separated (`tag=a,b`), or the parameter repeated (`tag=a&tag=b`). An empty
 * item is refused rather than ignored, so that `tag=` does not silently mean "any".
 */
export const ListParam = (description: string, example: string) =>
  applyDecorators(
    ApiPropertyOptional({ type: String, description, example }),
    IsOptional(),
    Transform(({ value }: { value: unknown }) => {
      const items = Array.isArray(value) ? value : [value];
      return items.every((item) => typeof item === 'string') ? items.flatMap((item: string) => item.split(',').map((part) => part.trim())) : value;
    }),
    IsArray(),
    ArrayMinSize(1),
    IsString({ each: true }),
    MinLengthEach(),
  );

/** Every item of a list has at least one character. */
const MinLengthEach = () => MinLength(1, { each: true, message: ({ property }) => `${property} must not hold an empty item` });
