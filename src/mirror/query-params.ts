import { Transform } from 'class-transformer';

/** Query strings carry text: `true`/`false` become booleans, anything else stays as is for the validator to name. */
export const BooleanParam = () =>
  Transform(({ value }: { value: unknown }) => (value === 'true' ? true : value === 'false' ? false : value));

export const IntParam = () =>
  Transform(({ value }: { value: unknown }) => (typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value));
