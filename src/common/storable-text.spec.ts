import { findUnstorable, textProblem, unstorableJsonNumber } from './storable-text';

describe('textProblem: what PostgreSQL cannot store in text or jsonb', () => {
  it.each([['plain'], [''], ['emoji 😀 paired'], ['\uffff\ufffe noncharacters'], ['Frühling распродажа 春']])('takes %j', (text) => {
    expect(textProblem(text)).toBeUndefined();
  });

  it.each([
    ['a\u0000b', 'must not contain a NUL character (U+0000)'],
    ['\ud800', 'must not contain an unpaired UTF-16 surrogate'],
    ['x\udc00', 'must not contain an unpaired UTF-16 surrogate'],
    ['\ude00\ud83d', 'must not contain an unpaired UTF-16 surrogate'],
  ])('refuses %j', (text, problem) => {
    expect(textProblem(text)).toBe(problem);
  });
});

describe('findUnstorable', () => {
  it('names the first bad string by its path, keys included', () => {
    expect(findUnstorable({ a: [{ b: 'ok' }, { c: 'x\u0000' }] }, '', 10)).toEqual({
      field: 'a[1].c',
      problem: 'must not contain a NUL character (U+0000)',
    });
    expect(findUnstorable({ post: { ['k\ud800']: 1 } }, '', 10)).toEqual({
      field: 'post',
      problem: 'has a key that must not contain an unpaired UTF-16 surrogate',
    });
    expect(findUnstorable('a\u0000', 'id', 10)).toEqual({ field: 'id', problem: 'must not contain a NUL character (U+0000)' });
  });

  it('refuses nesting past the limit without using the call stack', () => {
    let deep: unknown = 'leaf';
    for (let i = 0; i < 200_000; i += 1) deep = [deep];
    expect(findUnstorable(deep, '', 100)).toEqual({ field: expect.any(String), problem: 'nests deeper than 100 levels' });
    expect(findUnstorable({ a: { b: ['c'] } }, '', 3)).toBeUndefined();
  });

  it('does not look into a Buffer or a Date', () => {
    expect(findUnstorable(Buffer.from('a\u0000'), '', 10)).toBeUndefined();
    expect(findUnstorable({ at: new Date() }, '', 10)).toBeUndefined();
  });
});

describe('unstorableJsonNumber: numbers jsonb refuses (PostgreSQL 15, measured)', () => {
  it.each([
    ['{"a":1e131071}'],
    ['[9.5e131070]'],
    ['[0.5e-16382]'],
    ['[1.000e-16380]'],
    ['[0e200000]'],
    ['[-12.5e3, "1e999999"]'],
    ['{"1e999999": 2}'],
  ])('takes %s', (json) => {
    expect(unstorableJsonNumber(json)).toBeUndefined();
  });

  it.each([
    ['[1e131072]'],
    ['[0.5e-16383]'],
    ['[1.0000e-16380]'],
    ['[100000e-16387]'],
    ['[0e-16384]'],
    ['[1e9999999999]'],
    [`[${'9'.repeat(131_073)}]`],
  ])('refuses %s', (json) => {
    expect(unstorableJsonNumber(json)).toEqual(expect.any(String));
  });
});
