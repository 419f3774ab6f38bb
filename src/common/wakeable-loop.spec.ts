import type { Logger } from '@nestjs/common';
import { WakeableLoop, WakeableLoopOptions } from './wakeable-loop';

const IDLE_MS = 1_000;
const RETRY_MS = 250;

/**
 * A loop over a pass that records when each run began and how many ran at once; `hold()` makes the next passes wait
 * until `release()`. `answer` says what a pass returns (the next time it wants, or null), or throws.
 */
function harness(answer: (n: number) => number | null = () => null) {
  const started: number[] = [];
  let running = 0;
  let mostAtOnce = 0;
  let gate: Promise<void> | undefined;
  let open: (() => void) | undefined;
  const warn = jest.fn();
  const options: WakeableLoopOptions = {
    pass: async () => {
      started.push(Date.now());
      running += 1;
      mostAtOnce = Math.max(mostAtOnce, running);
      try {
        if (gate) await gate;
        return answer(started.length);
      } finally {
        running -= 1;
      }
    },
    idleMs: IDLE_MS,
    retryMs: RETRY_MS,
    logger: { warn } as unknown as Logger,
    what: 'Dispatching test requests',
  };
  const loop = new WakeableLoop(options);
  return {
    loop,
    warn,
    /** Pass start times, relative to `t0`. */
    startedAt: (t0: number) => started.map((t) => t - t0),
    count: () => started.length,
    mostAtOnce: () => mostAtOnce,
    running: () => running,
    hold() {
      gate = new Promise((resolve) => (open = resolve));
    },
    release() {
      gate = undefined;
      open?.();
    },
  };
}

const advance = (ms: number) => jest.advanceTimersByTimeAsync(ms);

describe('WakeableLoop', () => {
  let t0: number;

  beforeEach(() => {
    jest.useFakeTimers({ now: new Date('2026-11-30T12:00:00Z') });
    t0 = Date.now();
  });

  afterEach(() => jest.useRealTimers());

  it('runs nothing before start(), and a wake-up before it is ignored', async () => {
    const h = harness();

    h.loop.wake();
    h.loop.wakeAt(t0 + 10);
    await advance(5 * IDLE_MS);

    expect(h.count()).toBe(0);
  });

  it('runs the first pass after the start delay, then one every idleMs while nothing asks for one', async () => {
    const h = harness();

    h.loop.start(200);
    await advance(199);
    expect(h.count()).toBe(0);
    await advance(1);
    await advance(3 * IDLE_MS);

    expect(h.startedAt(t0)).toEqual([200, 1_200, 2_200, 3_200]);
    await h.loop.stop();
  });

  it('runs the next pass when the last one asked for it, if sooner than idleMs, and never later than idleMs', async () => {
    // The first pass wants the next in 300 ms; the second in 5 s, which the idle timeout cuts to 1 s.
    const h = harness((n) => (n === 1 ? Date.now() + 300 : Date.now() + 5_000));

    h.loop.start();
    await advance(2_000);

    expect(h.startedAt(t0)).toEqual([0, 300, 1_300]);
    await h.loop.stop();
  });

  it('runs a pass at once when woken, instead of at the idle timeout', async () => {
    const h = harness();
    h.loop.start();
    await advance(100);

    h.loop.wake();
    await advance(0);

    expect(h.startedAt(t0)).toEqual([0, 100]);
    // The idle timeout counts from the pass the wake-up ran.
    await advance(IDLE_MS);
    expect(h.startedAt(t0)).toEqual([0, 100, 1_100]);
    await h.loop.stop();
  });

  it('keeps only the earliest wanted time: a later wakeAt does not postpone a pass, an earlier one brings it forward', async () => {
    const h = harness();
    h.loop.start();
    await advance(0);

    h.loop.wakeAt(t0 + 5_000);
    h.loop.wakeAt(t0 + 400);
    h.loop.wakeAt(t0 + 700);
    await advance(IDLE_MS);

    expect(h.startedAt(t0)).toEqual([0, 400]);
    await h.loop.stop();
  });

  it('runs one pass at a time: wake-ups during a pass run exactly one more, right after it', async () => {
    const h = harness();
    h.loop.start();
    await advance(0);
    h.hold();
    h.loop.wake();
    await advance(0);
    expect(h.running()).toBe(1);

    // Three wake-ups while the second pass is held.
    await advance(50);
    h.loop.wake();
    h.loop.wake();
    h.loop.wakeAt(Date.now());
    await advance(100);
    expect(h.count()).toBe(2);

    h.release();
    await advance(0);

    expect(h.mostAtOnce()).toBe(1);
    expect(h.startedAt(t0)).toEqual([0, 0, 150]);
    // And no more than that one until the idle timeout.
    await advance(IDLE_MS - 1);
    expect(h.count()).toBe(3);
    await h.loop.stop();
  });

  it('runs a pass that fell due while another ran right after it, not at the next idle timeout', async () => {
    const h = harness();
    h.loop.start();
    await advance(0);
    h.hold();
    h.loop.wakeAt(t0 + 100);
    await advance(100);
    h.loop.wakeAt(t0 + 200);
    await advance(200);
    expect(h.count()).toBe(2);

    h.release();
    await advance(0);

    expect(h.startedAt(t0)).toEqual([0, 100, 300]);
    await h.loop.stop();
  });

  it('logs a failed pass under its name and retries it after retryMs', async () => {
    const h = harness((n) => {
      if (n === 1) throw new Error('connection refused');
      return null;
    });

    h.loop.start();
    await advance(RETRY_MS);

    expect(h.startedAt(t0)).toEqual([0, RETRY_MS]);
    expect(h.warn).toHaveBeenCalledTimes(1);
    expect(h.warn).toHaveBeenCalledWith('Dispatching test requests failed; retrying: connection refused');
    // A pass that succeeds goes back to the idle pace.
    await advance(IDLE_MS);
    expect(h.startedAt(t0)).toEqual([0, RETRY_MS, RETRY_MS + IDLE_MS]);
    await h.loop.stop();
  });

  it('keeps retrying a pass that keeps failing, at retryMs, without a pass at once', async () => {
    const h = harness(() => {
      throw new Error('still down');
    });

    h.loop.start();
    await advance(3 * RETRY_MS);

    expect(h.startedAt(t0)).toEqual([0, RETRY_MS, 2 * RETRY_MS, 3 * RETRY_MS]);
    expect(h.warn).toHaveBeenCalledTimes(4);
    await h.loop.stop();
  });

  it('stop() resolves only once the running pass has ended, and no pass starts after it', async () => {
    const h = harness();
    h.loop.start();
    await advance(0);
    h.hold();
    h.loop.wake();
    await advance(0);

    let stopped = false;
    const stopping = h.loop.stop().then(() => (stopped = true));
    h.loop.wake();
    await advance(IDLE_MS);
    expect(stopped).toBe(false);
    expect(h.running()).toBe(1);

    h.release();
    await stopping;
    expect(stopped).toBe(true);

    // Neither a wake-up nor the wake-up received during the pass, nor the idle timeout, starts one now.
    h.loop.wake();
    await advance(10 * IDLE_MS);
    expect(h.count()).toBe(2);
  });

  it('stop() with no pass running resolves at once and cancels the pending timer', async () => {
    const h = harness();
    h.loop.start(500);

    await h.loop.stop();
    await advance(10 * IDLE_MS);

    expect(h.count()).toBe(0);
  });

  it('starts again after stop() when start() is called again', async () => {
    const h = harness();
    h.loop.start();
    await advance(0);
    await h.loop.stop();

    h.loop.start(100);
    await advance(100);

    expect(h.startedAt(t0)).toEqual([0, 100]);
    await h.loop.stop();
  });
});
