/**
 * What PostgreSQL cannot store, decided before anything reaches it: text and jsonb refuse U+0000, jsonb refuses a
 * UTF-16 surrogate without its pair, and pg would silently turn one into U+FFFD in a text column. Deciding it here
 * makes the answer a 400 naming the field, whatever the database's health, instead of a 500 or a spooled event
 * that can never be stored.
 */

// Without the `u` flag the pattern sees UTF-16 code units, so an unpaired half is a match of its own.
// eslint-disable-next-line no-control-regex -- U+0000 is what is looked for.
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Why PostgreSQL cannot store this text, or undefined when it can. */
export function textProblem(text: string): string | undefined {
  const found = UNSTORABLE.exec(text);
  if (!found) return undefined;
  return found[0] === '\u0000' ? 'must not contain a NUL character (U+0000)' : 'must not contain an unpaired UTF-16 surrogate';
}

export const isStorableText = (text: string): boolean => !UNSTORABLE.test(text);

export interface ValueProblem {
  /** Where, as a path: `description`, `profileIds[2]`, `post.platforms[0].content`. */
  field: string;
  problem: string;
}

const isPlainObject = (value: unknown): value is Record<string, unknown> => {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value) as object | null;
  // fast-querystring's query objects have a prototype of their own whose prototype is null.
  return proto === null || proto === Object.prototype || Object.getPrototypeOf(proto) === null;
};

const pathOf = (parent: string, key: string | number) => (typeof key === 'number' ? `${parent}[${key}]` : parent === '' ? key : `${parent}.${key}`);

/**
 * The first string (a value or an object key) PostgreSQL cannot store in a parsed JSON value, a query string or
 * path parameters, or nesting deeper than `maxDepth`. Walked with a stack of its own: a 1 MiB body can nest deeper
 * than the call stack goes. Other objects (a Buffer: the webhook's raw body) are not looked into.
 */
export function findUnstorable(value: unknown, root: string, maxDepth: number): ValueProblem | undefined {
  const stack: Array<{ value: unknown; path: string; depth: number }> = [{ value, path: root, depth: 0 }];
  while (stack.length > 0) {
    const { value: current, path, depth } = stack.pop()!;
    if (typeof current === 'string') {
      const problem = textProblem(current);
      if (problem) return { field: path || 'value', problem };
      continue;
    }
    const entries: Array<[string | number, unknown]> | undefined = Array.isArray(current)
      ? current.map((item, i) => [i, item])
      : isPlainObject(current)
        ? Object.entries(current)
        : undefined;
    if (!entries) continue;
    if (depth >= maxDepth) return { field: path || 'value', problem: `nests deeper than ${maxDepth} levels` };
    for (const [key, item] of entries) {
      if (typeof key === 'string') {
        const problem = textProblem(key);
        if (problem) return { field: path || 'value', problem: `has a key that ${problem}` };
      }
      stack.push({ value: item, path: pathOf(path, key), depth: depth + 1 });
    }
  }
  return undefined;
}

// PostgreSQL's numeric, which jsonb keeps numbers in: at most 131,072 digits before the decimal point and 16,383
// after it, the latter counted as written (`1.0000e-16380` has 16,384).
const NUMERIC_MAX_INTEGER_DIGITS = 131_072;
const NUMERIC_MAX_SCALE = 16_383;
// Strings are matched (and skipped) first, so a digit inside one is never taken for a number.
const JSON_TOKENS = /"(?:[^"\\]|\\.)*"|-?(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?/g;

/** A number of a valid JSON text that jsonb refuses ("value overflows numeric format"), or undefined. */
export function unstorableJsonNumber(json: string): string | undefined {
  for (const match of json.matchAll(JSON_TOKENS)) {
    const [token, integer, fraction = '', exponentText = '0'] = match;
    if (integer === undefined) continue;
    // Past this PostgreSQL refuses any exponent, zero's too.
    if (exponentText.replace(/^[+-]/, '').length > 9) return token.slice(0, 40);
    const exponent = Number(exponentText);
    if (fraction.length - exponent > NUMERIC_MAX_SCALE) return token.slice(0, 40);
    const digits = `${integer}${fraction}`;
    const firstSignificant = digits.search(/[1-9]/);
    if (firstSignificant >= 0 && integer.length - firstSignificant + exponent > NUMERIC_MAX_INTEGER_DIGITS) return token.slice(0, 40);
  }
  return undefined;
}
