/**
 * The most of a text from elsewhere (an answer's body, an error's message) that an error text, a dead letter, a
 * run's error or a log line keeps: enough to see what went wrong, never a whole answer.
 */
export const MAX_ERROR_TEXT_BYTES = 2_048;

// eslint-disable-next-line no-control-regex -- U+0000 is what is looked for.
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * `text` in at most `maxBytes` bytes of UTF-8, marker included: a longer one keeps its beginning, cut between
 * characters, and ends saying how much was cut. What PostgreSQL cannot store (U+0000, an unpaired surrogate) becomes
 * U+FFFD, so that a row holding the text can always be written.
 */
export function boundedText(text: string, maxBytes = MAX_ERROR_TEXT_BYTES): string {
  let bytes = Buffer.byteLength(text);
  if (bytes <= maxBytes) {
    // U+FFFD takes three bytes where U+0000 took one: the cleaned text is measured again.
    text = storable(text);
    bytes = Buffer.byteLength(text);
    if (bytes <= maxBytes) return text;
  }
  const marker = ` … [cut: ${bytes} bytes in all]`;
  const room = Math.max(0, maxBytes - Buffer.byteLength(marker));
  // A character is at least a byte: what fits is within the first `room` code units (a pair is not split).
  const cut = room > 0 && isHighSurrogate(text.charCodeAt(room - 1)) ? room - 1 : room;
  const head = storable(text.slice(0, cut));
  let kept = 0;
  let end = 0;
  for (const char of head) {
    const size = Buffer.byteLength(char);
    if (kept + size > room) break;
    kept += size;
    end += char.length;
  }
  return `${head.slice(0, end)}${marker}`;
}

const storable = (text: string) => text.replace(UNSTORABLE, '\ufffd');
const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff;
