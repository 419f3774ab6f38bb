import { describeError, fullJitterBackoff, isNetworkError, parseHttpDate, parseRetryAfter, retryAfterMs } from './http-retry';

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
  const NOW = Date.UTC(2026, 2, 3, 11, 20, 0);

  it('reads delta-seconds', () => {
    expect(retryAfterMs({ 'retry-after': '3' })).toBe(3_000);
    expect(retryAfterMs({ 'retry-after': '0' })).toBe(0);
    expect(retryAfterMs({ 'retry-after': ' 120 ' })).toBe(120_000);
    expect(retryAfterMs({ 'retry-after': '86400' })).toBe(86_400_000);
  });

  it('reads an HTTP date as the wait from now, never negative', () => {
    const inTenSeconds = new Date(Date.now() + 10_000).toUTCString();
    const wait = retryAfterMs({ 'retry-after': inTenSeconds })!;
    // HTTP dates have whole seconds.
    expect(wait).toBeGreaterThan(8_000);
    expect(wait).toBeLessThanOrEqual(10_000);

    expect(retryAfterMs({ 'retry-after': new Date(Date.now() - 60_000).toUTCString() })).toBe(0);
  });

  it("reads each of RFC 9110's three HTTP-date forms", () => {
    expect(retryAfterMs({ 'retry-after': 'Tue, 03 Mar 2026 11:20:30 GMT' }, NOW)).toBe(30_000);
    expect(retryAfterMs({ 'retry-after': 'Tuesday, 03-Mar-26 11:21:00 GMT' }, NOW)).toBe(60_000);
    expect(retryAfterMs({ 'retry-after': 'Tue Mar  3 11:20:05 2026' }, NOW)).toBe(5_000);
    // A two-digit year more than 50 years ahead is the century before's.
    expect(parseHttpDate('Friday, 01-Jan-99 00:00:00 GMT', NOW)).toBe(Date.UTC(1999, 0, 1));
    // What Date.parse reads as dates is not one here.
    for (const text of ['5', '-5', '2026', '2026-03-03', 'March 3, 2026']) expect(parseHttpDate(text, NOW)).toBeUndefined();
  });

  it('takes the first of repeated headers', () => {
    expect(retryAfterMs({ 'retry-after': ['2', '30'] })).toBe(2_000);
  });

  it.each([
    '',
    'soon',
    '-5',
    '1.5',
    '1e300',
    'Infinity',
    'NaN',
    '0x10',
    '+3',
    '3 s',
    '2026-03-03T11:20:30Z',
    'Tue, 31 Feb 2026 11:20:30 GMT',
    'Tue, 03 Mar 2026 24:00:00 GMT',
    'Tue, 03 Mar 2026 11:20:30 UTC',
    'Tue, 3 Mar 2026 11:20:30 GMT',
  ])('is undefined for %p, which is neither delta-seconds nor an HTTP-date', (value) => {
    expect(retryAfterMs({ 'retry-after': value }, NOW)).toBeUndefined();
  });

  it('is undefined when absent, so the caller falls back to its own backoff', () => {
    expect(retryAfterMs({})).toBeUndefined();
  });

  it('reads absurdly many digits as an absurdly long wait, which every caller caps', () => {
    expect(parseRetryAfter('9'.repeat(400))).toBe(Infinity);
    expect(parseRetryAfter('99999999999999999999')).toBeGreaterThan(1e22);
    expect(retryAfterMs({ 'retry-after': 'Fri, 31 Dec 9999 23:59:59 GMT' }, NOW)).toBeGreaterThan(2.5e14);
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
