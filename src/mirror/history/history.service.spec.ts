import { ApiError } from '../../common/api-error';
import { POST_FIELD_ORDER } from '../posts/post-fields';
import { HistoryRepository } from './history.repository';
import { HistoryService, inFieldOrder } from './history.service';

describe('inFieldOrder', () => {
  it("writes Pozy's known fields in their order, then unknown ones, then the mirror's; with fields, only those", () => {
    const stored = { sequence: 2, id: 'p1', zzz: 1, content: 'c', workspaceId: 'default', aaa: true, title: null };
    expect(Object.keys(inFieldOrder(stored, POST_FIELD_ORDER))).toEqual(['id', 'title', 'content', 'zzz', 'aaa', 'workspaceId', 'sequence']);
    expect(inFieldOrder(stored, POST_FIELD_ORDER, ['sequence', 'id', 'mediaItems'])).toEqual({ id: 'p1', sequence: 2 });
  });
});

describe('HistoryService cursors', () => {
  const repository = {
    holders: jest.fn(async () => ['default']),
    versions: jest.fn(async () => []),
  } as unknown as HistoryRepository;
  const service = new HistoryService(repository);
  const page = (cursor: string) => service.page('post', 'p1', { cursor }, {} as never, '*');

  it.each([
    ['not base64 JSON', 'not-a-cursor'],
    ['JSON null', Buffer.from('null').toString('base64url')],
    ['a negative sequence', Buffer.from(JSON.stringify({ workspace: 'default', before: -1 })).toString('base64url')],
    ['a bad workspace', Buffer.from(JSON.stringify({ workspace: 'No Such', before: 3 })).toString('base64url')],
    ['another workspace', Buffer.from(JSON.stringify({ workspace: 'other', before: 3 })).toString('base64url')],
  ])('refuses %s with 400 invalid_query', async (_name, cursor) => {
    await expect(page(cursor)).rejects.toMatchObject({ status: 400, code: 'invalid_query' } satisfies Partial<ApiError>);
  });

  it('reads before the sequence a valid cursor names', async () => {
    await page(Buffer.from(JSON.stringify({ workspace: 'default', before: 3 })).toString('base64url'));
    expect(repository.versions).toHaveBeenCalledWith({}, 'post', 'default', 'p1', 3, 51);
  });
});
