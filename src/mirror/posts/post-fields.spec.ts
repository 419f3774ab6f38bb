import { plainToInstance } from 'class-transformer';
import { PozyPostDto } from '../../pozy/dto/pozy-post.dto';
import { postColumns } from './post-fields';

const post = (fields: Record<string, unknown>) =>
  plainToInstance(PozyPostDto, {
    _id: '66aa01f3c2b1e4d5f6a7b8c9',
    status: 'failed',
    platforms: [
      {
        platform: 'instagram',
        accountId: { _id: 'acc1', username: 'u' },
        status: 'failed',
        errorCategory: 'auth_expired',
        platformError: { code: 190 },
      },
      { platform: 'linkedin', accountId: 'acc2', status: 'published' },
    ],
    createdAt: '2026-03-01T17:12:00.000Z',
    updatedAt: '2026-03-02T09:00:05.000Z',
    ...fields,
  });

describe('postColumns: the whole post as the mirror stores it', () => {
  it('keeps the columns the filters need, the rest in extra, unknown fields included', () => {
    const columns = postColumns(
      post({
        title: 'Sale',
        tags: ['a'],
        hashtags: ['#b'],
        visibility: 'public',
        mediaItems: [{ type: 'image', url: 'u' }],
        metadata: { crmId: 'A-1' },
        brandNew: 1,
      }),
    );

    expect(columns).toMatchObject({
      title: 'Sale',
      tags: ['a'],
      hashtags: ['#b'],
      visibility: 'public',
      has_media: true,
      error_categories: ['auth_expired'],
    });
    expect(columns.extra).toEqual({ mediaItems: [{ type: 'image', url: 'u' }], metadata: { crmId: 'A-1' }, brandNew: 1 });
    expect(columns.account_ids).toEqual(['acc1', 'acc2']);
    // Whole targets, accountId the plain id.
    expect(columns.platforms).toEqual([
      { platform: 'instagram', accountId: 'acc1', status: 'failed', errorCategory: 'auth_expired', platformError: { code: 190 } },
      { platform: 'linkedin', accountId: 'acc2', status: 'published' },
    ]);
  });

  it('keeps a value of the wrong type for its column as Pozy sent it, and leaves the column empty', () => {
    const columns = postColumns(post({ title: 42, tags: 'not-a-list', visibility: { v: 1 } }));

    expect(columns).toMatchObject({ title: null, tags: [], visibility: null });
    expect(columns.extra).toEqual({ title: 42, tags: 'not-a-list', visibility: { v: 1 } });
  });

  it('an empty mediaItems is no media', () => {
    expect(postColumns(post({ mediaItems: [] })).has_media).toBe(false);
    expect(postColumns(post({})).has_media).toBe(false);
  });
});
