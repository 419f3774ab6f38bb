import { nextCursor, oldestAvailable } from './change-cursor';

describe('change feed cursors', () => {
  it('the oldest cursor available is just before the oldest position kept', () => {
    expect(oldestAvailable(null)).toBeNull();
    expect(oldestAvailable('1')).toBe('0');
    expect(oldestAvailable('9007199254740993')).toBe('9007199254740992');
  });

  it.each([
    ['a full page: its last entry', '10', '500', 100, '110', '110'],
    ['a short page: the newest position', '10', '42', 100, null, '42'],
    ['a filtered read that matched little: the end of its window', '10', '50000', 10_000, null, '10010'],
    ['an empty feed: where it was', '0', null, 100, null, '0'],
    ['a replica behind the cursor: never back', '500', '450', 100, null, '500'],
    ['beyond 2^53: exact', '9007199254740993', '9007199254740999', 100, null, '9007199254740999'],
  ])('%s', (_case, after, newest, scan, lastOfFullPage, expected) => {
    expect(nextCursor(after, newest, scan, lastOfFullPage)).toBe(expected);
  });
});
