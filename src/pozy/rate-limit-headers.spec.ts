import { integerHeader, rateLimitResetAt, rateLimitWait } from './rate-limit-headers';

const NOW = Date.UTC(2026, 2, 3, 11, 20, 0);
const CAP = 120_000;
const BACKOFF = 800;
const wait = (headers: Record<string, string>) => rateLimitWait(headers, BACKOFF, CAP, NOW);
const unixSeconds = (ms: number) => String(Math.floor(ms / 1000));

describe("rateLimitWait: how long a 429 pauses every replica, from Pozy's headers", () => {
  it('waits what Retry-After says, in seconds or as a date', () => {
    expect(wait({ 'retry-after': '7' })).toEqual({ ms: 7_000, from: 'Retry-After "7"' });
    expect(wait({ 'retry-after': 'Tue, 03 Mar 2026 11:20:30 GMT' })).toMatchObject({ ms: 30_000 });
  });

  it('prefers Retry-After to X-RateLimit-Reset, and takes the reset without one', () => {
    const reset = unixSeconds(NOW + 42_000);
    expect(wait({ 'retry-after': '3', 'x-ratelimit-reset': reset }).ms).toBe(3_000);
    expect(wait({ 'x-ratelimit-reset': reset })).toEqual({ ms: 42_000, from: `X-RateLimit-Reset "${reset}"` });
    // A reset already past: no wait.
    expect(wait({ 'x-ratelimit-reset': unixSeconds(NOW - 5_000) }).ms).toBe(0);
  });

  it('falls back to the backoff without either', () => {
    expect(wait({})).toEqual({ ms: BACKOFF, from: expect.stringMatching(/the backoff$/) });
  });

  it.each(['86400', '99999999999999999999', '9'.repeat(400), 'Fri, 31 Dec 9999 23:59:59 GMT'])(
    'caps Retry-After %p at the cap, and says so',
    (value) => {
      const result = wait({ 'retry-after': value });
      expect(result.ms).toBe(CAP);
      expect(result.adjusted).toMatch(/longer than POZY_MAX_PAUSE_MS \(120000 ms\)/);
      expect(result.from).toContain('Retry-After');
    },
  );

  it('caps a reset far ahead too', () => {
    expect(wait({ 'x-ratelimit-reset': unixSeconds(NOW + 86_400_000) })).toMatchObject({
      ms: CAP,
      adjusted: expect.stringMatching(/86400 s is longer/),
    });
    expect(wait({ 'x-ratelimit-reset': '99999999999999' })).toMatchObject({ ms: CAP });
  });

  it.each(['1e300', '-5', '1.5', 'soon', 'Infinity', ''])(
    'passes over Retry-After %p as if absent, and says so: the reset, else the backoff',
    (value) => {
      const withReset = wait({ 'retry-after': value, 'x-ratelimit-reset': unixSeconds(NOW + 20_000) });
      expect(withReset).toMatchObject({ ms: 20_000, adjusted: expect.stringMatching(/is neither delta-seconds nor an HTTP-date/) });
      expect(wait({ 'retry-after': value })).toMatchObject({ ms: BACKOFF, adjusted: expect.stringMatching(/neither/) });
    },
  );

  it('passes over a reset that is not a Unix time in seconds', () => {
    for (const reset of ['1e12', '-1', '1767225600.5', 'tomorrow']) {
      expect(wait({ 'x-ratelimit-reset': reset })).toMatchObject({ ms: BACKOFF, adjusted: expect.stringMatching(/is not a Unix time in seconds/) });
    }
  });

  it('quotes at most the first 64 characters of what Pozy sent', () => {
    const result = wait({ 'retry-after': 'x'.repeat(10_000) });
    expect(result.adjusted!.length).toBeLessThan(200);
  });
});

describe('the X-RateLimit headers the budget reads', () => {
  it('reads digits only, as safe integers', () => {
    expect(integerHeader('600')).toBe(600);
    expect(integerHeader([' 12 ', '13'])).toBe(12);
    for (const value of [undefined, '', '1.5', '1e3', '-1', '0x10', '9'.repeat(16), 'many']) expect(integerHeader(value)).toBeUndefined();
  });

  it('reads the reset as Unix seconds', () => {
    expect(rateLimitResetAt('1772536830')).toBe(1_772_536_830_000);
    expect(rateLimitResetAt('1e300')).toBeUndefined();
  });
});
