import { ApiError } from '../../common/api-error';
import { decodePostCursor, encodePostCursor, parseSort } from './post-sort';

describe('post cursors: a cursor holds its order', () => {
  it('round-trips a timestamp order, at a value and past the posts that have one', () => {
    const sort = parseSort('scheduledFor:desc');
    for (const cursor of [
      { after: 'p1', value: '2026-03-01T09:00:00.000Z' },
      { after: 'p2', value: null },
    ]) {
      expect(decodePostCursor(encodePostCursor(sort, cursor), sort)).toEqual(cursor);
    }
  });

  it('keeps the order by id compatible with the cursors handed out before orders existed', () => {
    const old = Buffer.from(JSON.stringify({ after: 'p9' })).toString('base64url');

    expect(encodePostCursor(parseSort(undefined), { after: 'p9' })).toBe(old);
    expect(decodePostCursor(old, parseSort('id:asc'))).toEqual({ after: 'p9' });
  });

  it('refuses a cursor made for another order, naming it', () => {
    const cursor = encodePostCursor(parseSort('publishedAt:asc'), { after: 'p1', value: null });

    expect(() => decodePostCursor(cursor, parseSort('publishedAt:desc'))).toThrow(/made for sort=publishedAt:asc/);
    expect(() => decodePostCursor(cursor, parseSort(undefined))).toThrow(ApiError);
  });

  it.each(['not-base64-json', Buffer.from('{"sort":"scheduledFor:asc","after":"p","value":"soon"}').toString('base64url')])(
    'refuses a cursor it did not make: %s',
    (cursor) => {
      expect(() => decodePostCursor(cursor, parseSort('scheduledFor:asc'))).toThrow(/cursor is not one this service returned/);
    },
  );
});
