import { SharedComputation, SharedInFlight } from './shared-computation';

const REUSE_MS = 1_000;

/** A computation whose runs the test finishes by hand: `finish(i, value)` or `fail(i, error)` settles run `i`. */
function controlled() {
  const runs: Array<{ resolve: (value: number) => void; reject: (error: Error) => void }> = [];
  let clock = 0;
  const shared = new SharedComputation<number>(
    () => new Promise<number>((resolve, reject) => runs.push({ resolve, reject })),
    REUSE_MS,
    () => clock,
  );
  return {
    shared,
    runs: () => runs.length,
    finish: async (i: number, value: number) => {
      runs[i].resolve(value);
      await Promise.resolve();
    },
    fail: async (i: number, error: Error) => {
      runs[i].reject(error);
      await Promise.resolve();
    },
    advance: (ms: number) => (clock += ms),
  };
}

describe('SharedComputation', () => {
  it('runs one computation for every caller that asks while it is in flight', async () => {
    const c = controlled();
    const callers = Array.from({ length: 100 }, () => c.shared.get());
    expect(c.runs()).toBe(1);
    await c.finish(0, 42);
    expect(await Promise.all(callers)).toEqual(Array(100).fill(42));
  });

  it('answers the value again for REUSE_MS after it settled, then computes anew', async () => {
    const c = controlled();
    const first = c.shared.get();
    await c.finish(0, 1);
    await first;
    c.advance(REUSE_MS - 1);
    expect(await c.shared.get()).toBe(1);
    expect(c.runs()).toBe(1);

    c.advance(1);
    const second = c.shared.get();
    expect(c.runs()).toBe(2);
    await c.finish(1, 2);
    expect(await second).toBe(2);
  });

  it('answers a failure to every caller that shared it, and again until REUSE_MS has passed', async () => {
    const c = controlled();
    const callers = [c.shared.get(), c.shared.get()];
    await c.fail(0, new Error('statement timeout'));
    for (const caller of callers) await expect(caller).rejects.toThrow('statement timeout');
    await expect(c.shared.get()).rejects.toThrow('statement timeout');
    expect(c.runs()).toBe(1);

    c.advance(REUSE_MS);
    const retried = c.shared.get();
    expect(c.runs()).toBe(2);
    await c.finish(1, 7);
    expect(await retried).toBe(7);
  });

  it('never runs two computations at once, however long one takes', async () => {
    const c = controlled();
    const first = c.shared.get();
    c.advance(10 * REUSE_MS);
    const meanwhile = c.shared.get();
    expect(c.runs()).toBe(1);
    await c.finish(0, 3);
    expect([await first, await meanwhile]).toEqual([3, 3]);
  });

  it('turns a computation that throws at once into a rejected answer', async () => {
    const shared = new SharedComputation<number>(() => {
      throw new Error('no connection');
    }, REUSE_MS);
    await expect(shared.get()).rejects.toThrow('no connection');
  });
});

describe('SharedInFlight', () => {
  /** Computations the test settles by hand, by the order they started. */
  function manual() {
    const started: Array<{ key: string; resolve: (value: string) => void; reject: (error: Error) => void }> = [];
    const shared = new SharedInFlight<string>();
    const get = (key: string) => shared.get(key, () => new Promise<string>((resolve, reject) => started.push({ key, resolve, reject })));
    return { get, started };
  }

  it('shares a computation among the callers asking for its key while it runs, and no other key', async () => {
    const m = manual();
    const a = [m.get('after=7'), m.get('after=7'), m.get('after=7')];
    const b = m.get('after=8');
    expect(m.started.map((s) => s.key)).toEqual(['after=7', 'after=8']);
    m.started[0].resolve('page 7');
    m.started[1].resolve('page 8');
    expect(await Promise.all(a)).toEqual(['page 7', 'page 7', 'page 7']);
    expect(await b).toBe('page 8');
  });

  it('keeps nothing once it settled: the next caller computes again, after a success or a failure', async () => {
    const m = manual();
    const first = m.get('k');
    m.started[0].reject(new Error('statement timeout'));
    await expect(first).rejects.toThrow('statement timeout');
    const second = m.get('k');
    expect(m.started).toHaveLength(2);
    m.started[1].resolve('fresh');
    expect(await second).toBe('fresh');
    const third = m.get('k');
    expect(m.started).toHaveLength(3);
    m.started[2].resolve('fresher');
    expect(await third).toBe('fresher');
  });
});
