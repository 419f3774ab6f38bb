import { alreadyReflected, READ_LAG_MIN_RETRY_MS, readLagRetryMs } from './reconcile-rules';

const T = Date.UTC(2026, 10, 30, 12, 0, 0);
const at = (ms: number) => new Date(T + ms);

describe('alreadyReflected: the skip rule', () => {
  const state = (lastReadMs: number | null, forcedMs: number | null = null) => ({
    lastReadAt: lastReadMs === null ? null : at(lastReadMs),
    forcedAt: forcedMs === null ? null : at(forcedMs),
  });

  it.each([
    ['no skew measured: beyond the margin', 5_001, 0, true],
    ['no skew measured: at the margin', 5_000, 0, false],
    ['our clock ahead by 30 s: a read 20 s after (by our clock) may predate the event', 20_000, 30_000, false],
    ['our clock ahead by 30 s: beyond margin and skew', 35_001, 30_000, true],
    ["our clock behind Pozy's: the margin is not narrowed", 5_001, -60_000, true],
  ])('%s', (_what, lastReadMs, aheadMs, expected) => {
    expect(alreadyReflected(at(0), state(lastReadMs), 5_000, aheadMs)).toBe(expected);
  });

  it('never skips without an event, a read, or with a forced read not yet answered', () => {
    expect(alreadyReflected(null, state(60_000), 0, 0)).toBe(false);
    expect(alreadyReflected(at(0), state(null), 0, 0)).toBe(false);
    expect(alreadyReflected(at(0), state(60_000, 60_000), 0, 0)).toBe(false);
  });
});

describe('readLagRetryMs: a missing resource a recent event announced', () => {
  const GRACE = 10_000;

  it('believes the answer when no event announced the resource, or once the grace is over', () => {
    expect(readLagRetryMs(null, at(0), GRACE)).toBeNull();
    expect(readLagRetryMs(at(0), at(GRACE), GRACE)).toBeNull();
    expect(readLagRetryMs(at(0), at(GRACE + 1), GRACE)).toBeNull();
  });

  it('waits at least the minimum, then doubles, and never past the grace', () => {
    expect(readLagRetryMs(at(0), at(10), GRACE)).toBe(READ_LAG_MIN_RETRY_MS);
    expect(readLagRetryMs(at(0), at(1_000), GRACE)).toBe(1_000);
    expect(readLagRetryMs(at(0), at(4_000), GRACE)).toBe(4_000);
    expect(readLagRetryMs(at(0), at(8_000), GRACE)).toBe(2_000);
  });

  it('reaches the end of the grace in a bounded number of reads', () => {
    let now = 10;
    let reads = 0;
    for (let wait = readLagRetryMs(at(0), at(now), GRACE); wait !== null; wait = readLagRetryMs(at(0), at(now), GRACE)) {
      now += wait;
      reads += 1;
    }
    expect(now).toBe(GRACE);
    expect(reads).toBeLessThanOrEqual(8);
  });

  it('counts an event received "after" now (clocks of two hosts) as just received', () => {
    expect(readLagRetryMs(at(500), at(0), GRACE)).toBe(READ_LAG_MIN_RETRY_MS);
  });
});
