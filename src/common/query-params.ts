import { applyDecorators } from '@nestjs/common';
import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsInt, IsOptional, Max, Min } from 'class-validator';

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
