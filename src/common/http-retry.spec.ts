import { describeError, fullJitterBackoff, isNetworkError, retryAfterMs } from './http-retry';

describe('fullJitterBackoff: how long a retry of Pozy waits', () => {
  afterEach(() => jest.restoreAllMocks());

  it('waits a random share of base × 2^(attempt−1): nothing at the low end, the whole bound at the high end', () => {
    const random = jest.spyOn(Math, 'random');

    random.mockReturnValue(0);
    expect([1, 2, 3, 4].map((attempt) => fullJitterBackoff(attempt, 250, 5_000))).toEqual([0, 0, 0, 0]);

    random.mockReturnValue(0.999_999);
    expect([1, 2, 3, 4].map((attempt) => Math.round(fullJitterBackoff(attempt, 250, 5_000)))).toEqual([250, 500, 1_000, 2_000]);

    random.mockReturnValue(0.5);
    expect(fullJitterBackoff(3, 250, 5_000)).toBe(500);
  });

  it('never waits past the cap, however many attempts', () => {
    jest.spyOn(Math, 'random').mockReturnValue(0.999_999);

    expect(Math.round(fullJitterBackoff(5, 250, 5_000))).toBe(4_000);
    for (const attempt of [6, 10, 40]) {
      const wait = fullJitterBackoff(attempt, 250, 5_000);
      expect(wait).toBeLessThan(5_000);
      expect(wait).toBeGreaterThan(4_999);
    }
  });

  it('spreads the waits of callers retrying together over the whole bound', () => {
    const waits = Array.from({ length: 2_000 }, () => fullJitterBackoff(3, 250, 5_000));

    expect(Math.min(...waits)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...waits)).toBeLessThan(1_000);
    // Not bunched: each quarter of the bound gets a fair share of them.
    for (let quarter = 0; quarter < 4; quarter += 1) {
      const inQuarter = waits.filter((w) => w >= quarter * 250 && w < (quarter + 1) * 250).length;
      expect(inQuarter).toBeGreaterThan(350);
    }
  });
});

describe('retryAfterMs: reading Retry-After', () => {
  it('reads seconds', () => {
    expect(retryAfterMs({ 'retry-after': '3' })).toBe(3_000);
    expect(retryAfterMs({ 'retry-after': '0' })).toBe(0);
    expect(retryAfterMs({ 'retry-after': '1.5' })).toBe(1_500);
  });

  it('reads an HTTP date as the wait from now, never negative', () => {
    const inTenSeconds = new Date(Date.now() + 10_000).toUTCString();
    const wait = retryAfterMs({ 'retry-after': inTenSeconds })!;
    // HTTP dates have whole seconds.
    expect(wait).toBeGreaterThan(8_000);
    expect(wait).toBeLessThanOrEqual(10_000);

    expect(retryAfterMs({ 'retry-after': new Date(Date.now() - 60_000).toUTCString() })).toBe(0);
  });

  it('takes the first of repeated headers', () => {
    expect(retryAfterMs({ 'retry-after': ['2', '30'] })).toBe(2_000);
  });

  it('is undefined when absent or unreadable, so the caller falls back to its own backoff', () => {
    expect(retryAfterMs({})).toBeUndefined();
    expect(retryAfterMs({ 'retry-after': '' })).toBeUndefined();
    expect(retryAfterMs({ 'retry-after': 'soon' })).toBeUndefined();
  });

  it('never answers a negative wait', () => {
    expect(retryAfterMs({ 'retry-after': '-5' })).toBe(0);
  });
});

describe('isNetworkError: no answer at all (what the dead-letter rules count as unreachable)', () => {
  const coded = (code: string) => Object.assign(new Error(code), { code });

  it.each(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_SOCKET'])(
    'counts %s',
    (code) => expect(isNetworkError(coded(code))).toBe(true),
  );

  it('counts our own per-request timeout (AbortSignal.timeout) and an abort', () => {
    expect(isNetworkError(new DOMException('The operation was aborted due to timeout', 'TimeoutError'))).toBe(true);
    expect(isNetworkError(new DOMException('This operation was aborted', 'AbortError'))).toBe(true);
  });

  it('does not count an answer that was wrong, nor a bug', () => {
    expect(isNetworkError(coded('UND_ERR_RESPONSE_STATUS_CODE'))).toBe(false);
    expect(isNetworkError(new SyntaxError('Unexpected token < in JSON'))).toBe(false);
    expect(isNetworkError(new TypeError('fetch failed'))).toBe(false);
  });
});

describe('describeError', () => {
  it('names the code and the message', () => {
    expect(describeError(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' }))).toBe(
      'ECONNREFUSED (connect ECONNREFUSED 127.0.0.1:9)',
    );
    expect(describeError(new DOMException('The operation was aborted due to timeout', 'TimeoutError'))).toBe(
      'TimeoutError (The operation was aborted due to timeout)',
    );
  });
});
