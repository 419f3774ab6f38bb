/** What opens every page: its resources follow, comma-separated. */
const PAGE_HEAD = '{"data":[';
const COMMA = 0x2c;

/**
 * A list endpoint's page `{ data, nextCursor }` (the same bytes as whole-object.ts's `pageJson`) from its resources'
 * JSON text, written once into the buffer that is sent. Joining the texts into one string copied a page three times on
 * the heap of short-lived objects: the join, its flattening when Fastify measured its length, and its encoding for the
 * socket; under load those copies were most of the garbage collector's work. A Buffer is sent by Fastify as it is.
 */
export function pageBytes(data: readonly string[], nextCursor: string | null): Buffer {
  const tail = `],"nextCursor":${JSON.stringify(nextCursor)}}`;
  let size = PAGE_HEAD.length + Buffer.byteLength(tail) + Math.max(0, data.length - 1);
  for (const text of data) size += Buffer.byteLength(text);
  const bytes = Buffer.allocUnsafe(size);
  let at = bytes.write(PAGE_HEAD, 0, 'latin1');
  for (let i = 0; i < data.length; i++) {
    if (i > 0) bytes[at++] = COMMA;
    at += bytes.write(data[i], at);
  }
  at += bytes.write(tail, at);
  // Every byte was written (allocUnsafe's are not zeroed): a page shorter than measured would send stale memory.
  if (at !== size) throw new Error(`A page measured ${size} bytes but wrote ${at}`);
  return bytes;
}
