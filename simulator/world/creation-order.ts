/**
 * Items in the order they were added, some later removed: the k-th item still present, and how many are, in
 * O(log n). Listing pages by position and sampling at random stay cheap on a world of 100,000 posts, where an
 * array's indexOf and splice on every deletion would not. A Fenwick tree counts the items present; removed ones
 * leave a hole, so positions never move.
 */
export class CreationOrder<T> {
  private readonly items: T[] = [];
  private present = new Uint8Array(1024);
  /** 1-based Fenwick tree over `present`. */
  private tree = new Int32Array(1025);
  private count = 0;

  /** How many items are present. */
  get size(): number {
    return this.count;
  }

  /** Appends `item`; answers its position, for `remove`. */
  push(item: T): number {
    const position = this.items.length;
    if (position === this.present.length) this.grow();
    this.items.push(item);
    this.present[position] = 1;
    this.add(position, 1);
    this.count += 1;
    return position;
  }

  remove(position: number): void {
    if (this.present[position] !== 1) return;
    this.present[position] = 0;
    this.add(position, -1);
    this.count -= 1;
  }

  /** The k-th item present, 0-based, in the order added. */
  at(k: number): T {
    if (!Number.isInteger(k) || k < 0 || k >= this.count) throw new RangeError(`No item ${k} of ${this.count}`);
    // Descends the tree: the largest prefix holding at most k items ends just before the one wanted.
    const capacity = this.present.length;
    let position = 0;
    let rest = k + 1;
    for (let step = highestPowerOfTwo(capacity); step > 0; step >>= 1) {
      const next = position + step;
      if (next <= capacity && this.tree[next] < rest) {
        position = next;
        rest -= this.tree[next];
      }
    }
    return this.items[position];
  }

  /** Every item present, in the order added. */
  toArray(): T[] {
    const out: T[] = [];
    for (let i = 0; i < this.items.length; i++) if (this.present[i] === 1) out.push(this.items[i]);
    return out;
  }

  private add(position: number, delta: number): void {
    for (let i = position + 1; i < this.tree.length; i += i & -i) this.tree[i] += delta;
  }

  /** Doubles the capacity and rebuilds the tree in O(n). */
  private grow(): void {
    const present = new Uint8Array(this.present.length * 2);
    present.set(this.present);
    const tree = new Int32Array(present.length + 1);
    for (let i = 1; i < tree.length; i++) {
      tree[i] += present[i - 1];
      const parent = i + (i & -i);
      if (parent < tree.length) tree[parent] += tree[i];
    }
    this.present = present;
    this.tree = tree;
  }
}

function highestPowerOfTwo(n: number): number {
  let power = 1;
  while (power * 2 <= n) power *= 2;
  return power;
}
