import { partitionOf } from './partition';

/** FNV-1a 32-bit written the long way, to check the short one against. */
function fnv1a(text: string): number {
  let hash = 2166136261n;
  for (const byte of new TextEncoder().encode(text)) {
    hash ^= BigInt(byte);
    hash = (hash * 16777619n) % 2n ** 32n;
  }
  return Number(hash);
}

describe('partitionOf', () => {
  it('is FNV-1a 32-bit of "<type>:<id>" modulo the partitions (published test vectors)', () => {
    // FNV-1a 32 of "" is the offset basis, of "a" 0xe40c292c, of "foobar" 0xbf9cf968.
    expect(fnv1a('')).toBe(0x811c9dc5);
    expect(fnv1a('a')).toBe(0xe40c292c);
    expect(fnv1a('foobar')).toBe(0xbf9cf968);
    // Vectors a client in another language can check itself against.
    expect(fnv1a('post:p1')).toBe(0x9c423aac);
    expect(partitionOf('post', 'p1', 1)).toBe(0);
    expect(partitionOf('post', 'p1', 3)).toBe(0x9c423aac % 3);
    expect(partitionOf('post', 'p1', 64)).toBe(0x9c423aac % 64);
  });

  it('agrees with the long way for many ids, partition counts and non-ASCII ids', () => {
    for (let i = 0; i < 500; i += 1) {
      const id = i % 7 === 0 ? `pöst-${i}-é` : `66aa01f3c2b1e4d5f6a7${i.toString(16).padStart(4, '0')}`;
      for (const type of ['post', 'account'] as const) {
        for (const n of [1, 2, 3, 7, 64]) expect(partitionOf(type, id, n)).toBe(fnv1a(`${type}:${id}`) % n);
      }
    }
  });

  it('spreads resources across the partitions, and a post and an account of one id apart', () => {
    const counts = [0, 0, 0];
    for (let i = 0; i < 3000; i += 1) counts[partitionOf('post', `post-${i}`, 3)] += 1;
    for (const count of counts) expect(count).toBeGreaterThan(800);
    expect([0, 1, 2, 3].map((i) => partitionOf('account', `x${i}`, 1000))).not.toEqual([0, 1, 2, 3].map((i) => partitionOf('post', `x${i}`, 1000)));
  });

  it('refuses a partition count that is not a positive integer', () => {
    expect(() => partitionOf('post', 'p1', 0)).toThrow(RangeError);
    expect(() => partitionOf('post', 'p1', 1.5)).toThrow(RangeError);
  });
});
