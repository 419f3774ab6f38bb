import { applyDecorators, Header } from '@nestjs/common';
import { ArrayMaxSize, IsIn } from 'class-validator';
import { Expression, RawBuilder, sql } from 'kysely';
import { namesLiteral } from '../database/sql-expressions';
import { ListParam } from '../common/query-params';

/** The fields of a mirrored resource: Pozy's known ones, then the mirror's own, in the order they are answered. */
export interface FieldOrder {
  pozy: readonly string[];
  mirror: readonly string[];
}

/** What `fields=` may name. */
export const fieldNames = (order: FieldOrder): string[] => [...order.pozy, ...order.mirror];

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

/**
 * A mirrored resource's parts: Pozy's fields held in columns, `extra` (every other field of Pozy's answer, and a value
 * its column could not hold), and the mirror's own fields. Each value is a SQL expression of the value to answer.
 */
export interface WholeObject {
  pozy: Record<string, Expression<unknown>>;
  extra: Expression<unknown>;
  mirror: Record<string, Expression<unknown>>;
}

/** `jsonb_build_object` of these fields (the keys are literals: a parameter there would have no type). */
const jsonbObject = (fields: Record<string, Expression<unknown>>): RawBuilder<unknown> =>
  sql`jsonb_build_object(${sql.join(Object.entries(fields).flatMap(([key, value]) => [sql.lit(key), value]))})`;

/** The resource as one jsonb value: Pozy's fields, `extra` over them (a value its column could not hold wins over the empty column), the mirror's last. */
export const wholeObjectJson = ({ pozy, extra, mirror }: WholeObject): RawBuilder<Record<string, unknown>> =>
  sql<Record<string, unknown>>`(${jsonbObject(pozy)} || coalesce(${extra}, '{}'::jsonb) || ${jsonbObject(mirror)})`;

/**
 * JSON text PostgreSQL wrote (see presentedJson), sent to the socket as it is: a page is never parsed into objects by
 * the driver and serialised again by Node.
 */
export type JsonText = string & { readonly __jsonText: true };

/**
 * The resource as JSON text in the documented order (what wholeObjectJson holds, which jsonb orders its own way):
 * Pozy's known fields in their order, those pozy-sync does not know in jsonb's order, the mirror's last; with
 * `fields`, only those. Written by concatenation, without building a jsonb value and writing it out again (which cost
 * PostgreSQL several times the row's own output).
 */
export function wholeObjectText({ pozy, extra, mirror }: WholeObject, order: FieldOrder, fields?: readonly string[]): RawBuilder<JsonText> {
  const wanted = (name: string) => fields === undefined || fields.includes(name);
  // A member is NULL (and left out by concat_ws) when its value is: an extra field the row does not hold.
  const member = (name: string, value: Expression<unknown>) => sql`${sql.lit(`${JSON.stringify(name)}:`)} || ${value}`;
  const valueOf = (value: Expression<unknown>) => sql`coalesce(to_json(${value})::text, 'null')`;
  const fromExtra = (name: string) => sql`(${extra} -> ${sql.lit(name)})::text`;
  const members: Array<RawBuilder<unknown>> = [];
  for (const name of order.pozy) {
    if (wanted(name)) members.push(member(name, name in pozy ? sql`coalesce(${fromExtra(name)}, ${valueOf(pozy[name])})` : fromExtra(name)));
  }
  if (fields === undefined) {
    const known = namesLiteral([...order.pozy, ...order.mirror]);
    // Most rows hold no field pozy-sync does not know: `-` tells so without expanding `extra` into rows.
    members.push(sql`(CASE WHEN ${extra} - ${known} <> '{}'::jsonb THEN (SELECT string_agg(to_json(e.key)::text || ':' || e.value::text, ',' ORDER BY e.n)
      FROM jsonb_each(${extra}) WITH ORDINALITY AS e(key, value, n) WHERE e.key <> ALL(${known})) END)`);
  }
  for (const name of order.mirror) if (wanted(name) && name in mirror) members.push(member(name, valueOf(mirror[name])));
  if (members.length === 0) return sql<JsonText>`'{}'::text`;
  return sql<JsonText>`('{' || concat_ws(',', ${sql.join(members)}) || '}')`;
}

/** A list endpoint's page from its resources' JSON text: `{ data, nextCursor }`. */
export const pageJson = (data: readonly JsonText[], nextCursor: string | null): JsonText =>
  `{"data":[${data.join(',')}],"nextCursor":${JSON.stringify(nextCursor)}}` as JsonText;

/** On a handler that answers JsonText: Fastify sends a string it is told is JSON without serialising it again. */
export const AnswersJsonText = () => Header('content-type', 'application/json; charset=utf-8');
