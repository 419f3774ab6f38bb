import { ApiError } from '../common/api-error';
import { decodeCursor, encodeCursor, page } from './cursor';

const rows = (...ids: string[]) => ids.map((id) => ({ workspace_id: 'default', id }));

describe('page cursors', () => {
  it('gives back the id and workspace a cursor was made from, whatever characters the id holds', () => {
    for (const id of ['66aa01f3c2b1e4d5f6a7b8c9', 'a/b+c=d', 'ünïcode ✓', '"quoted"']) {
      expect(decodeCursor(encodeCursor({ id, workspace_id: 'acme-eu' }))).toEqual({ after: id, workspace: 'acme-eu' });
    }
  });

  it('still reads a cursor handed out before workspaces: its id alone', () => {
    expect(decodeCursor(Buffer.from(JSON.stringify({ after: 'b' })).toString('base64url'))).toEqual({ after: 'b' });
  });

  it('is URL-safe as it stands: no +, / or = to escape in a query string', () => {
    const cursor = encodeCursor({ id: '\u00ff\u00fe\u00fd?>>>', workspace_id: 'default' });
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
  });

  it('reads no cursor as the first page', () => {
    expect(decodeCursor(undefined)).toBeNull();
  });

  it.each([
    ['not base64 JSON', '%%%'],
    ['empty', ''],
    ['JSON without `after`', Buffer.from(JSON.stringify({ before: 'x' })).toString('base64url')],
    ['an empty `after`', Buffer.from(JSON.stringify({ after: '' })).toString('base64url')],
    ['a numeric `after`', Buffer.from(JSON.stringify({ after: 42 })).toString('base64url')],
    ['a JSON array', Buffer.from('[1]').toString('base64url')],
    ['JSON null', Buffer.from('null').toString('base64url')],
    ['a workspace that is no slug', Buffer.from(JSON.stringify({ after: 'x', workspace: 'Not A Slug' })).toString('base64url')],
  ])('refuses a cursor that is %s with a 400 naming the problem', (_what, cursor) => {
    let thrown: unknown;
    try {
      decodeCursor(cursor);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ApiError);
    expect(thrown).toMatchObject({ status: 400, code: 'invalid_query', message: expect.stringContaining('cursor') });
  });
});

describe('page()', () => {
  it('answers `limit` rows and a cursor after the last of them when one more row was read', () => {
    const result = page(rows('a', 'b', 'c'), 2);

    expect(result.data).toEqual(rows('a', 'b'));
    expect(result.nextCursor).not.toBeNull();
    expect(decodeCursor(result.nextCursor!)).toEqual({ after: 'b', workspace: 'default' });
  });

  it('answers no cursor when the rows read fit the page: that was the last page', () => {
    expect(page(rows('a', 'b'), 2)).toEqual({ data: rows('a', 'b'), nextCursor: null });
    expect(page(rows('a'), 2)).toEqual({ data: rows('a'), nextCursor: null });
    expect(page([], 2)).toEqual({ data: [], nextCursor: null });
  });

  it('walks a list page by page without repeating or missing a row', () => {
    const all = rows(...Array.from({ length: 23 }, (_, i) => `id-${String(i).padStart(2, '0')}`));
    // What a query does with the cursor: the rows after it, in id order, one more than the page holds.
    const query = (after: string | null, limit: number) => all.filter((r) => after === null || r.id > after).slice(0, limit + 1);
    const afterOf = (cursor: string | null) => (cursor === null ? null : decodeCursor(cursor)!.after);

    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const result: { data: { id: string }[]; nextCursor: string | null } = page(query(afterOf(cursor), 5), 5);
      seen.push(...result.data.map((r) => r.id));
      cursor = result.nextCursor;
      pages += 1;
    } while (cursor !== null);

    expect(seen).toEqual(all.map((r) => r.id));
    expect(pages).toBe(5);
  });
});
