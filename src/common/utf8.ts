/** Where a byte sequence stops being UTF-8 (RFC 3629), and why. */
export interface Utf8Problem {
  /** The offset of the first byte of the sequence at fault. */
  offset: number;
  /** e.g. `a continuation byte (0x80) without a lead byte`. */
  problem: string;
}

const hex = (byte: number) => `0x${byte.toString(16).toUpperCase().padStart(2, '0')}`;
const isContinuation = (byte: number) => (byte & 0xc0) === 0x80;

/**
 * The first place these bytes are not UTF-8, or undefined when they are. Node's `toString('utf8')` would turn each
 * into U+FFFD silently, so a body would be stored as something other than what was sent (and signed). Refused as
 * RFC 3629 refuses them: continuation bytes without a lead, overlong forms, UTF-16 surrogates (U+D800 to U+DFFF),
 * code points past U+10FFFF, and sequences cut short.
 */
export function utf8Problem(bytes: Uint8Array): Utf8Problem | undefined {
  for (let i = 0; i < bytes.length;) {
    const lead = bytes[i];
    if (lead < 0x80) {
      i += 1;
      continue;
    }
    const at = (problem: string): Utf8Problem => ({ offset: i, problem });
    if (isContinuation(lead)) return at(`a continuation byte (${hex(lead)}) without a lead byte`);
    if (lead === 0xc0 || lead === 0xc1) return at(`an overlong encoding (lead byte ${hex(lead)})`);
    if (lead > 0xf4) return at(`a byte that never occurs in UTF-8 (${hex(lead)})`);
    const length = lead < 0xe0 ? 2 : lead < 0xf0 ? 3 : 4;
    for (let k = 1; k < length; k += 1) {
      if (i + k >= bytes.length) return at(`a ${length}-byte sequence cut short by the end of the body`);
      if (!isContinuation(bytes[i + k])) return at(`a ${length}-byte sequence cut short (${hex(bytes[i + k])} is not a continuation byte)`);
    }
    const second = bytes[i + 1];
    if (lead === 0xe0 && second < 0xa0) return at(`an overlong encoding (${hex(lead)} ${hex(second)})`);
    if (lead === 0xf0 && second < 0x90) return at(`an overlong encoding (${hex(lead)} ${hex(second)})`);
    if (lead === 0xed && second >= 0xa0)
      return at(`a UTF-16 surrogate encoded as UTF-8 (${hex(lead)} ${hex(second)}): U+D800 to U+DFFF are not characters`);
    if (lead === 0xf4 && second >= 0x90) return at(`a code point past U+10FFFF (${hex(lead)} ${hex(second)})`);
    i += length;
  }
  return undefined;
}

/** Whether these bytes start with UTF-8's byte order mark (EF BB BF). */
export const startsWithBom = (bytes: Uint8Array): boolean => bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf;
