import fc from 'fast-check';
import { startsWithBom, utf8Problem } from './utf8';

const bytes = (...values: number[]) => Uint8Array.from(values);

describe('utf8Problem', () => {
  it.each([
    ['ASCII', Buffer.from('{"a":1}')],
    ['two, three and four bytes', Buffer.from('é 春 😀')],
    ['the edges of each length', Buffer.from('\u0080\u07ff\u0800\ud7ff\ue000\uffff\u{10000}\u{10ffff}')],
    ['nothing', bytes()],
  ])('takes %s', (_name, value) => {
    expect(utf8Problem(value)).toBeUndefined();
  });

  it.each([
    ['a lone continuation byte', bytes(0x61, 0x80), 1, 'a continuation byte (0x80) without a lead byte'],
    ['an overlong two-byte form', bytes(0xc0, 0xaf), 0, 'an overlong encoding (lead byte 0xC0)'],
    ['an overlong three-byte form', bytes(0xe0, 0x80, 0xaf), 0, 'an overlong encoding (0xE0 0x80)'],
    ['an overlong four-byte form', bytes(0xf0, 0x80, 0x80, 0xaf), 0, 'an overlong encoding (0xF0 0x80)'],
    ['a high surrogate', bytes(0xed, 0xa0, 0x80), 0, 'a UTF-16 surrogate encoded as UTF-8 (0xED 0xA0): U+D800 to U+DFFF are not characters'],
    ['a low surrogate', bytes(0x20, 0xed, 0xbf, 0xbf), 1, 'a UTF-16 surrogate encoded as UTF-8 (0xED 0xBF): U+D800 to U+DFFF are not characters'],
    ['a code point past U+10FFFF', bytes(0xf4, 0x90, 0x80, 0x80), 0, 'a code point past U+10FFFF (0xF4 0x90)'],
    ['a lead byte past F4', bytes(0xf5, 0x80, 0x80, 0x80), 0, 'a byte that never occurs in UTF-8 (0xF5)'],
    ['a sequence cut short by another byte', bytes(0xe2, 0x82, 0x22), 0, 'a 3-byte sequence cut short (0x22 is not a continuation byte)'],
    ['a sequence cut short by the end', bytes(0x7b, 0xf0, 0x9f, 0x98), 1, 'a 4-byte sequence cut short by the end of the body'],
  ])('refuses %s, saying where', (_name, value, offset, problem) => {
    expect(utf8Problem(value)).toEqual({ offset, problem });
  });

  it('agrees with a strict decoder on any bytes', () => {
    const strict = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
    const decodes = (value: Uint8Array) => {
      try {
        strict.decode(value);
        return true;
      } catch {
        return false;
      }
    };
    // Mostly bytes around the edges UTF-8 draws, so that invalid and valid sequences both come up often.
    const byte = fc.oneof(fc.integer({ min: 0, max: 255 }), fc.constantFrom(0x7f, 0x80, 0xbf, 0xc0, 0xc2, 0xdf, 0xe0, 0xed, 0xef, 0xf0, 0xf4, 0xf5));
    fc.assert(
      fc.property(fc.array(byte, { maxLength: 12 }), (values) => {
        const value = Uint8Array.from(values);
        expect(utf8Problem(value) === undefined).toBe(decodes(value));
      }),
      { numRuns: 20_000 },
    );
  });
});

describe('startsWithBom', () => {
  it('finds EF BB BF at the start only', () => {
    expect(startsWithBom(bytes(0xef, 0xbb, 0xbf, 0x7b))).toBe(true);
    expect(startsWithBom(bytes(0x7b, 0xef, 0xbb, 0xbf))).toBe(false);
    expect(startsWithBom(bytes(0xef, 0xbb))).toBe(false);
  });
});
