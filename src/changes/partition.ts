/** What a resource is, for partitioning: the part of a change type before the dot (`post.changed` → `post`). */
export type PartitionedResource = 'post' | 'account';

const FNV_OFFSET_BASIS = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

/**
 * The partition (0 to `partitions` − 1) of a named consumer that every change of one resource falls in, so each
 * partition sees a resource's changes in their order. Exactly, so that any client can compute the same:
 *
 * 1. key = `${type}:${resourceId}`, e.g. `post:66aa01f3c2b1e4d5f6a7b8c9`, as UTF-8 bytes;
 * 2. h = 0x811c9dc5; for each byte b: h = (h XOR b) × 0x01000193, modulo 2^32 (FNV-1a, 32 bits);
 * 3. partition = h mod partitions, with h read as an unsigned 32-bit integer.
 *
 * With one partition it is always 0.
 */
export function partitionOf(type: PartitionedResource, resourceId: string, partitions: number): number {
  if (!Number.isInteger(partitions) || partitions < 1) throw new RangeError(`partitions must be a positive integer, not ${partitions}`);
  let hash = FNV_OFFSET_BASIS;
  for (const byte of Buffer.from(`${type}:${resourceId}`, 'utf8')) {
    hash ^= byte;
    // Math.imul multiplies modulo 2^32 (as a signed 32-bit result); >>> 0 reads it back unsigned.
    hash = Math.imul(hash, FNV_PRIME) >>> 0;
  }
  return hash % partitions;
}

/** The resource a change type is about: `post.*` → post, `account.*` → account. */
export const resourceOfType = (changeType: string): PartitionedResource => (changeType.startsWith('post.') ? 'post' : 'account');
