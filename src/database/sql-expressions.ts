import { Expression, RawBuilder, sql } from 'kysely';

/**
 * SQL fragments that statements of several modules share, so that each is written (and cast) one way. They go inside
 * Kysely's `sql` templates or the builder, and add no parentheses of their own.
 */

/** The database's clock, the one stored due times and leases are compared with (not this process's). */
export const now = (): RawBuilder<Date> => sql<Date>`now()`;

/**
 * `ms` milliseconds as an interval: `ms * interval '1 millisecond'`, or `ms::int * interval '1 millisecond'` with
 * `'int'`. `ms` is a number (sent as a parameter) or an expression, such as a column or a computed count.
 */
export const milliseconds = (ms: number | Expression<number>, cast?: 'int'): RawBuilder<string> =>
  cast === 'int' ? sql<string>`${ms}::int * interval '1 millisecond'` : sql<string>`${ms} * interval '1 millisecond'`;

/** A timestamp as JSON exactly as the query endpoints answer it (JavaScript's toISOString), whatever the session's time zone. */
export function isoText(timestamp: Expression<Date>): RawBuilder<string>;
export function isoText(timestamp: Expression<Date | null>): RawBuilder<string | null>;
export function isoText(timestamp: Expression<Date | null>): RawBuilder<string | null> {
  return sql<string | null>`to_char(${timestamp} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
}

/** The SQL array literal (`ARRAY['a','b']::text[]`) of a fixed list of field names: the code's own constants, never input. */
export const namesLiteral = (names: readonly string[]): RawBuilder<string[]> => {
  for (const name of names) if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new Error(`not a field name: ${name}`);
  return sql.raw<string[]>(`ARRAY[${names.map((name) => `'${name}'`).join(',')}]::text[]`);
};
