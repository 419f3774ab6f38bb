import fc from 'fast-check';
import { Kysely, PostgresDialect, sql } from 'kysely';
import type { Pool } from 'pg';
import { ACCOUNT_FIELD_ORDER } from '../src/mirror/accounts/account-fields';
import { POST_FIELD_ORDER } from '../src/mirror/posts/post-fields';
import { FieldOrder, pageJson, wholeObjectJson, wholeObjectText, WholeObject } from '../src/mirror/whole-object';
import { createTestDatabase, TestDatabase } from './support/database';

/** What the answer must be: Pozy's known fields in their order, then unknown ones, then the mirror's; with `fields`, only those. */
function documented(body: Record<string, unknown>, order: FieldOrder, fields?: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const put = (key: string) => {
    if (key in body && (fields === undefined || fields.includes(key))) out[key] = body[key];
  };
  order.pozy.forEach(put);
  if (fields === undefined) for (const key of Object.keys(body)) if (!order.pozy.includes(key) && !order.mirror.includes(key)) out[key] = body[key];
  order.mirror.forEach(put);
  return out;
}

/**
 * The JSON text PostgreSQL writes for the query endpoints (wholeObjectText), against the documented order of the
 * object the feed keeps (wholeObjectJson) on any row: the endpoints send it to the socket as it is, so it must be valid
 * JSON holding exactly the fields asked for, with their values.
 */
describe('wholeObjectText: a resource as JSON text in the documented order', () => {
  let db: TestDatabase;
  let pool: Pool;
  let kysely: Kysely<Record<string, never>>;

  beforeAll(async () => {
    db = await createTestDatabase('whole_object_text');
    pool = db.pool(2);
    kysely = new Kysely({ dialect: new PostgresDialect({ pool }) });
  });

  afterAll(async () => {
    await kysely?.destroy();
    await db?.drop();
  });

  const sqlType = (value: unknown) =>
    Array.isArray(value) ? 'text[]' : typeof value === 'number' ? 'bigint' : typeof value === 'boolean' ? 'boolean' : 'text';
  /** A row of a post or an account: some of Pozy's fields in columns (SQL values), `extra`, the mirror's fields. */
  const row = (columns: Record<string, unknown>, extra: Record<string, unknown> | null, mirror: Record<string, unknown>): WholeObject => {
    const values = (fields: Record<string, unknown>) =>
      Object.fromEntries(Object.entries(fields).map(([key, value]) => [key, sql`${value}::${sql.raw(sqlType(value))}`]));
    return { pozy: values(columns), extra: sql`${extra === null ? null : JSON.stringify(extra)}::jsonb`, mirror: values(mirror) };
  };
  const render = async (object: WholeObject, order: FieldOrder, fields?: string[]) => {
    const { rows } = await sql<{ text: string; jsonb: Record<string, unknown> }>`SELECT ${wholeObjectText(object, order, fields)} AS text,
      ${wholeObjectJson(object)} AS jsonb`.execute(kysely);
    return { parsed: JSON.parse(rows[0].text) as Record<string, unknown>, text: rows[0].text, jsonb: rows[0].jsonb };
  };

  it("puts Pozy's known fields first, then unknown ones, then the mirror's; a value in extra wins over its empty column", async () => {
    const object = row(
      { id: 'p', title: null, content: 'c' },
      { zNew: true, title: 42, metadata: { b: 1, a: [1.5, null, 'é"\\'] } },
      { sequence: '2' },
    );
    const { parsed } = await render(object, POST_FIELD_ORDER);
    expect(Object.keys(parsed)).toEqual(['id', 'title', 'content', 'metadata', 'zNew', 'sequence']);
    expect(parsed).toEqual({ id: 'p', title: 42, content: 'c', metadata: { b: 1, a: [1.5, null, 'é"\\'] }, zNew: true, sequence: '2' });
  });

  it('answers only the fields asked for, and an empty object for none of them', async () => {
    const object = row({ id: 'p', title: 't', content: 'c' }, { zNew: true }, { sequence: 2 });
    expect((await render(object, POST_FIELD_ORDER, ['sequence', 'title'])).parsed).toEqual({ title: 't', sequence: 2 });
    expect((await render(object, POST_FIELD_ORDER, ['hashtags'])).text).toBe('{}');
    expect((await render(row({ id: 'p' }, null, {}), POST_FIELD_ORDER)).parsed).toEqual({ id: 'p' });
  });

  it('writes any row as the feed keeps it, in the documented order, for posts and for accounts', async () => {
    const orders = [POST_FIELD_ORDER, ACCOUNT_FIELD_ORDER];
    const names = [...new Set(orders.flatMap((order) => [...order.pozy, ...order.mirror])), 'pozyLabsNew', 'zeta', 'a'];
    // Values as JSON can hold them (no -0, which JSON writes as 0).
    const json = fc.jsonValue().map((v) => JSON.parse(JSON.stringify(v)) as unknown);
    const column = fc.oneof(fc.constant(null), fc.string(), fc.integer(), fc.boolean(), fc.array(fc.string(), { maxLength: 3 }));
    await fc.assert(
      fc.asyncProperty(
        // `fields` names only the resource's own fields: the endpoints refuse any other with a 400.
        fc.constantFrom(...orders).chain((order) =>
          fc.record({
            order: fc.constant(order),
            columns: fc.dictionary(fc.constantFrom(...order.pozy), column, { maxKeys: 6 }),
            extra: fc.option(fc.dictionary(fc.constantFrom(...names), json, { maxKeys: 8 }), { nil: null }),
            // Every row has each of the mirror's fields.
            mirror: fc.record(Object.fromEntries(order.mirror.map((name) => [name, column]))),
            fields: fc.option(fc.subarray([...order.pozy, ...order.mirror]), { nil: undefined }),
          }),
        ),
        async ({ order, columns, extra, mirror, fields }) => {
          const { parsed, jsonb } = await render(row(columns, extra, mirror), order, fields);
          const expected = documented(jsonb, order, fields);
          expect(parsed).toEqual(expected);
          // Unknown fields keep jsonb's order among themselves; only the grouping is documented.
          const known = (keys: string[]) => keys.filter((key) => order.pozy.includes(key) || order.mirror.includes(key));
          expect(known(Object.keys(parsed))).toEqual(known(Object.keys(expected)));
          expect(Object.keys(parsed).slice(known(Object.keys(parsed)).filter((key) => order.pozy.includes(key)).length)).toEqual(
            Object.keys(expected).slice(known(Object.keys(expected)).filter((key) => order.pozy.includes(key)).length),
          );
        },
      ),
      { numRuns: 300 },
    );
  });

  it('joins a page as { data, nextCursor }', () => {
    expect(JSON.parse(pageJson([], null))).toEqual({ data: [], nextCursor: null });
    expect(JSON.parse(pageJson(['{"id":"a"}', '{"id":"b"}'] as never, 'c"1'))).toEqual({ data: [{ id: 'a' }, { id: 'b' }], nextCursor: 'c"1' });
  });
});
