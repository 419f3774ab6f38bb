import { pageJson, JsonText } from './whole-object';
import { pageBytes } from './page-bytes';

describe('pageBytes', () => {
  const texts = (...values: unknown[]) => values.map((value) => JSON.stringify(value) as JsonText);

  it.each([
    ['no resources, no cursor', texts(), null],
    ['one resource and a cursor', texts({ id: 'a', title: 'Spring sale' }), 'eyJhZnRlciI6ImEifQ'],
    ['text beyond ASCII', texts({ title: 'Frühling распродажа 🎉' }, { content: 'soldes 2027 — en ligne' }), 'c\u00e9"\\'],
    ['many', texts(...Array.from({ length: 51 }, (_, n) => ({ id: n, content: 'x'.repeat(n * 40) }))), null],
  ])('writes the bytes pageJson would: %s', (_name, data, cursor) => {
    const bytes = pageBytes(data, cursor);
    expect(bytes.toString('utf8')).toBe(pageJson(data, cursor));
    expect(bytes.length).toBe(Buffer.byteLength(pageJson(data, cursor)));
    expect(JSON.parse(bytes.toString('utf8'))).toEqual({ data: data.map((text) => JSON.parse(text) as unknown), nextCursor: cursor });
  });
});
