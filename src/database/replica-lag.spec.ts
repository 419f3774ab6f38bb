import { LagTracker, parseLsn } from './replica-lag';

describe('parseLsn', () => {
  it.each([
    ['0/0', 0n],
    ['0/3016038', 0x3016038n],
    ['16/B374D848', (0x16n << 32n) | 0xb374d848n],
  ])('reads %s as a byte offset', (text, expected) => {
    expect(parseLsn(text)).toBe(expected);
  });

  it('refuses what is not a WAL position', () => {
    expect(() => parseLsn('16-B374D848')).toThrow(/Not a WAL position/);
  });
});

describe('LagTracker', () => {
  it('knows no lag until both servers were sampled', () => {
    const tracker = new LagTracker();
    expect(tracker.lagMs(1_000)).toBeUndefined();
    tracker.primaryAt(100n, 1_000);
    expect(tracker.lagMs(1_000)).toBeUndefined();
    tracker.replayedTo(100n);
    expect(tracker.lagMs(1_000)).toBe(0);
  });

  it('stays at 0 while the primary is idle, however long', () => {
    const tracker = new LagTracker();
    tracker.primaryAt(100n, 1_000);
    tracker.replayedTo(100n);
    for (let at = 1_200; at <= 60_000; at += 200) {
      tracker.primaryAt(100n, at);
      tracker.replayedTo(100n);
    }
    expect(tracker.lagMs(60_000)).toBe(0);
  });

  it('grows from the first sample the replica has not replayed, while its replay stands still', () => {
    const tracker = new LagTracker();
    tracker.primaryAt(100n, 1_000);
    tracker.replayedTo(100n);
    tracker.primaryAt(150n, 1_200);
    tracker.primaryAt(150n, 1_400);
    tracker.primaryAt(300n, 1_600);
    tracker.replayedTo(100n);
    expect(tracker.lagMs(1_700)).toBe(500);
    expect(tracker.lagMs(5_200)).toBe(4_000);
    // Replayed past the first write but not the second: behind since the second was first seen.
    tracker.replayedTo(200n);
    expect(tracker.lagMs(5_200)).toBe(3_600);
    tracker.replayedTo(300n);
    expect(tracker.lagMs(5_200)).toBe(0);
  });

  it('never goes back to an older replay position, and forgets everything on reset', () => {
    const tracker = new LagTracker();
    tracker.primaryAt(300n, 1_000);
    tracker.replayedTo(300n);
    tracker.replayedTo(200n);
    expect(tracker.lagMs(2_000)).toBe(0);
    tracker.reset();
    expect(tracker.lagMs(2_000)).toBeUndefined();
  });

  it('keeps its oldest positions when the replica stays behind for long', () => {
    const tracker = new LagTracker();
    tracker.replayedTo(0n);
    for (let i = 1; i <= 20_000; i++) tracker.primaryAt(BigInt(i), i);
    expect(tracker.lagMs(30_000)).toBe(29_999);
    tracker.replayedTo(15_000n);
    // Positions past the ones kept were merged into the newest kept: behind at most since it was seen.
    expect(tracker.lagMs(30_000)).toBe(30_000 - 10_000);
  });
});
