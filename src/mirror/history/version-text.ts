import { Expression, RawBuilder, sql } from 'kysely';
import { namesLiteral } from '../../database/sql-expressions';
import { FieldOrder, JsonText } from '../whole-object';

/**
 * A stored version (jsonb, as the feed keeps a resource) as JSON text written the way GET /posts/:id writes the live
 * row (wholeObjectText): Pozy's known fields in their order, those pozy-sync does not know in jsonb's order, the
 * mirror's last, each value as PostgreSQL writes it; with `fields`, only those. `compact` names the fields the live
 * answer writes from a text[] (to_json, no spaces) where jsonb writes `", "`: the answer is then the same text.
 */
export function versionText(
  data: Expression<unknown>,
  order: FieldOrder,
  compact: readonly string[],
  fields?: readonly string[],
): RawBuilder<JsonText> {
  const wanted = (name: string) => fields === undefined || fields.includes(name);
  // A member is NULL (and left out by concat_ws) when the version has no such field.
  const member = (name: string) => {
    const value = compact.includes(name)
      ? sql`CASE WHEN jsonb_typeof(${data} -> ${sql.lit(name)}) = 'array'
              THEN to_json(ARRAY(SELECT jsonb_array_elements_text(${data} -> ${sql.lit(name)})))::text
              ELSE (${data} -> ${sql.lit(name)})::text END`
      : sql`(${data} -> ${sql.lit(name)})::text`;
    return sql`${sql.lit(`${JSON.stringify(name)}:`)} || ${value}`;
  };
  const members: Array<RawBuilder<unknown>> = order.pozy.filter(wanted).map(member);
  if (fields === undefined) {
    members.push(sql`(SELECT string_agg(to_json(e.key)::text || ':' || e.value::text, ',' ORDER BY e.n)
      FROM jsonb_each(${data}) WITH ORDINALITY AS e(key, value, n) WHERE e.key <> ALL(${namesLiteral([...order.pozy, ...order.mirror])}))`);
  }
  members.push(...order.mirror.filter(wanted).map(member));
  if (members.length === 0) return sql<JsonText>`'{}'::text`;
  return sql<JsonText>`('{' || concat_ws(',', ${sql.join(members)}) || '}')`;
}
