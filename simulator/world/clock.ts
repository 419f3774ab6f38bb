/** The world's time: every mutation happens at a strictly later millisecond than the one before. */
export const HOUR = 3_600_000;
export const DAY = 24 * HOUR;
export const YEAR = 365 * DAY;

export const iso = (ms: number) => new Date(ms).toISOString();

/** The wall clock (or a fixed one, so that times replay too), except that it never goes back and never repeats a millisecond. */
export class WorldClock {
  private lastTime = 0;

  constructor(private readonly now: () => number) {}

  /** The time of the latest mutation (ms). */
  get time(): number {
    return this.lastTime;
  }

  /** The next mutation time: the clock, but never equal to or before the previous one. */
  tick(): number {
    this.lastTime = Math.max(this.now(), this.lastTime + 1);
    return this.lastTime;
  }

  /** What `tick` would answer now, without taking it. */
  peek(): number {
    return Math.max(this.now(), this.lastTime + 1);
  }

  /** Makes `time` the latest mutation's: after seeding a history that no tick made. */
  setTime(time: number): void {
    this.lastTime = time;
  }
}
