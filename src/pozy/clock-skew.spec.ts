import { ClockSkewEstimator, skewBounds } from './clock-skew';

const T = Date.UTC(2026, 10, 30, 12, 0, 0);
/** Pozy's Date header for a moment `ms` of Pozy's clock: second resolution. */
const header = (ms: number) => new Date(Math.floor(ms / 1000) * 1000).toUTCString();

describe('skewBounds', () => {
  it("bounds the skew by the round trip and the header's second resolution", () => {
    // Our clock 30 s ahead; Pozy stamped at its T + 0.4 s; the round trip took 20 ms.
    const bounds = skewBounds(T + 30_390, T + 30_410, header(T + 400));
    expect(bounds).toEqual({ low: 30_390 - 1_000, high: 30_410 });
    expect(bounds!.low).toBeLessThanOrEqual(30_000);
    expect(bounds!.high).toBeGreaterThanOrEqual(30_000);
  });

  it('ignores a missing or unparsable Date header', () => {
    expect(skewBounds(T, T, undefined)).toBeUndefined();
    expect(skewBounds(T, T, 'yesterday-ish')).toBeUndefined();
  });
});

describe('ClockSkewEstimator', () => {
  /** Answers at Pozy times spread over a few seconds, our clock `skew` ahead, 10 ms round trips. */
  function measured(skew: number, n: number, estimator = new ClockSkewEstimator()) {
    for (let i = 0; i < n; i += 1) {
      const pozyAt = T + i * 137;
      estimator.add(skewBounds(pozyAt + skew - 5, pozyAt + skew + 5, header(pozyAt))!);
    }
    return estimator;
  }

  it('knows nothing before an answer', () => {
    expect(new ClockSkewEstimator().estimate()).toBeUndefined();
  });

  it.each([
    ['ahead', 30_000],
    ['behind', -12_345],
    ['in step', 0],
  ])('narrows to the true skew within the round trip when our clock is %s', (_what, skew) => {
    const estimate = measured(skew, 20).estimate()!;
    expect(estimate.low).toBeLessThanOrEqual(skew);
    expect(estimate.high).toBeGreaterThanOrEqual(skew);
    expect(estimate.high - estimate.low).toBeLessThan(200);
    expect(Math.abs(estimate.aheadMs - skew)).toBeLessThan(100);
  });

  it('follows a clock step once the recent answers disagree with the old ones', () => {
    const estimator = measured(0, 32, new ClockSkewEstimator(32));
    measured(20_000, 1, estimator);
    expect(estimator.estimate()!.high).toBeGreaterThanOrEqual(20_000);
    measured(20_000, 32, estimator);
    expect(Math.abs(estimator.estimate()!.aheadMs - 20_000)).toBeLessThan(200);
  });
});
