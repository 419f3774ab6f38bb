import { PageWrites } from './import-and-sweep-runner';

/** A page write the test ends when it wants: started in order, finished by `finish()`. */
function pageWrites(atOnce: () => number) {
  const writes = new PageWrites(atOnce);
  const started: number[] = [];
  const finishers: Array<() => void> = [];
  let underWay = 0;
  let peak = 0;
  const add = (n: number) =>
    writes.add([`post-${n}`], async () => {
      started.push(n);
      underWay += 1;
      peak = Math.max(peak, underWay);
      await new Promise<void>((resolve) => finishers.push(resolve));
      underWay -= 1;
    });
  /** Adds pages 1 to `count` one after another, as the run does (each add waits for a place). */
  const addAll = async (count: number) => {
    for (let n = 1; n <= count; n += 1) await add(n);
  };
  /** Lets the oldest unfinished write end, and the promises waiting on it run. */
  const finishOldest = async () => {
    finishers.shift()?.();
    await new Promise((resolve) => setImmediate(resolve));
  };
  /** Once `adding` is done, lets every write still under way end, and waits for the last. */
  const finishAll = async (adding: Promise<void>) => {
    await adding;
    while (finishers.length > 0) await finishOldest();
    await writes.drain();
  };
  return { addAll, started, finishOldest, finishAll, peak: () => peak };
}

describe('PageWrites: the import pages under way at once', () => {
  it('starts up to three pages at once while nothing asks it to give way', async () => {
    const { addAll, started, finishOldest, finishAll, peak } = pageWrites(() => 3);
    const adding = addAll(6);
    await new Promise((resolve) => setImmediate(resolve));

    expect(started).toEqual([1, 2, 3]);
    // Each page that ends lets the next one start.
    await finishOldest();
    expect(started).toEqual([1, 2, 3, 4]);
    await finishOldest();
    await finishOldest();
    expect(started).toEqual([1, 2, 3, 4, 5, 6]);
    await finishAll(adding);
    expect(peak()).toBe(3);
  });

  it('writes one page at a time while the process runs jobs, and three again once it stops', async () => {
    let busy = true;
    const { addAll, started, finishOldest, finishAll, peak } = pageWrites(() => (busy ? 1 : 3));
    const adding = addAll(6);
    await new Promise((resolve) => setImmediate(resolve));
    expect(started).toEqual([1]);

    await finishOldest();
    expect(started).toEqual([1, 2]);
    await finishOldest();
    expect(started).toEqual([1, 2, 3]);
    expect(peak()).toBe(1);

    busy = false;
    await finishOldest();
    // Page 3 done, and up to three under way again: 4, 5 and 6.
    expect(started).toEqual([1, 2, 3, 4, 5, 6]);
    await finishAll(adding);
    expect(peak()).toBe(3);
  });
});
