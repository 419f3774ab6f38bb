/**
 * The partition of a named consumer that a post or an account falls in, exactly as the service computes it: FNV-1a
 * (32 bits) over the UTF-8 bytes of `<kind>:<id>` (`post:66aa…`, `account:66ab…`), modulo the consumer's partitions.
 * A resource's changes therefore always come to the same partition, in order.
 */
export function partitionOf(kind: 'post' | 'account', id: string, partitions: number): number {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(`${kind}:${id}`, 'utf8')) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % partitions;
}
