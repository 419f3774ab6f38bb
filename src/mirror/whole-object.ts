import { applyDecorators } from '@nestjs/common';
import { ArrayMaxSize, IsIn } from 'class-validator';
import { RawBuilder, sql } from 'kysely';
import { ListParam } from '../common/query-params';

/** The fields of a mirrored resource: Pozy's known ones, then the mirror's own, in the order they are answered. */
export interface FieldOrder {
  pozy: readonly string[];
  mirror: readonly string[];
}

/** What `fields=` may name. */
export const fieldNames = (order: FieldOrder): string[] => [...order.pozy, ...order.mirror];

/**
 * A resource's fields in the documented order (jsonb keeps its own): Pozy's known fields, then those pozy-sync does
 * not know, then the mirror's. With `fields`, only those.
 */
export function present(body: Record<string, unknown>, order: FieldOrder, fields?: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const put = (key: string) => {
    if (key in body && (fields === undefined || fields.includes(key))) out[key] = body[key];
  };
  order.pozy.forEach(put);
  if (fields === undefined) for (const key of Object.keys(body)) if (!order.pozy.includes(key) && !order.mirror.includes(key)) out[key] = body[key];
  order.mirror.forEach(put);
  return out;
}

/** `fields=`: a comma-separated list of the resource's field names; an unknown name is a 400 naming `fields`. */
export const FieldsParam = (order: FieldOrder, what: string) => {
  const names = fieldNames(order);
  return applyDecorators(
    ListParam(`Only these fields of each ${what} (comma-separated): ${names.join(', ')}.`, `${names[0]},${names[names.length - 1]}`),
    ArrayMaxSize(names.length),
    IsIn(names, { each: true, message: `fields must name fields of ${what === 'account' ? 'an' : 'a'} ${what}: ${names.join(', ')}` }),
  );
};

/**
 * An upsert's `SET` for these columns of a table whose rows are `Row`: each takes the value the statement tried to
 * insert. Built from the same list as the insert's columns, so that a column a read gives is never inserted and then
 * left out of the update. `fromExcluded<Row>()(columns)`: the row type is given, the columns are checked against it.
 */
export const fromExcluded =
  <Row>() =>
  <C extends keyof Row & string>(columns: readonly C[]) =>
    Object.fromEntries(columns.map((column) => [column, sql.ref(`excluded.${column}`)])) as { [K in C]: RawBuilder<Row[K]> };

/**
 * Fields of `answer` not held in a column of their own: what a row keeps in `extra`. Values left undefined by the
 * transformation are not fields.
 */
export function extraFields(answer: object, inColumns: ReadonlySet<string>): Record<string, unknown> {
  const extra: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(answer)) if (!inColumns.has(key) && value !== undefined) extra[key] = value;
  return extra;
}

/** A mirrored resource as one jsonb value: Pozy's fields from columns, `extra` over them (a value its column could not hold wins over the empty column), the mirror's own last. */
export const wholeObjectJson = (
  pozy: RawBuilder<unknown>,
  extra: RawBuilder<unknown>,
  mirror: RawBuilder<unknown>,
): RawBuilder<Record<string, unknown>> => sql<Record<string, unknown>>`(${pozy} || coalesce(${extra}, '{}'::jsonb) || ${mirror})`;
