/** `value` as one of `values`, the only ones this service writes; anything else is a broken invariant. */
export function oneOf<T extends string>(values: readonly T[], value: string, what: string): T {
  const found = values.find((v) => v === value);
  if (found === undefined) throw new Error(`Unknown ${what}: ${value}`);
  return found;
}
