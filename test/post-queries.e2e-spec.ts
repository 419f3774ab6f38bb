import type { Post } from '../simulator/world/pozy-shapes';
import type { Compilable, CompiledQuery } from 'kysely';
import { QueryPool } from '../src/database/query-pool';
import { HARNESS_ADMIN_TOKEN, settled } from './support/harness';
import { getJson } from './support/http';
import { waitFor } from './support/service';
import { SimulatorSpec, startSpec } from './support/spec';

const ADMIN = { authorization: `Bearer ${HARNESS_ADMIN_TOKEN}` };
const POSTS = 120;
const BASE = Date.parse('2027-03-01T09:00:00.000Z');
const MINUTE = 60_000;

interface Page {
  data: Array<Record<string, unknown> & { id: string }>;
  nextCursor: string | null;
}

type SortField = 'id' | 'scheduledFor' | 'publishedAt' | 'pozyUpdatedAt';

/** The words of a text as PostgreSQL's `simple` configuration splits them: lower-cased runs of letters and digits. */
const words = (text: string | undefined) =>
  new Set(
    (text ?? '')
      .toLowerCase()
      .split(/[^\p{L}\p{N}]+/u)
      .filter(Boolean),
  );

/** Pozy's value of a sort field, as an instant (null when the post has none). */
function sortValue(post: Post, field: SortField): number | null {
  const value = field === 'pozyUpdatedAt' ? post.updatedAt : field === 'id' ? undefined : post[field];
  return value === undefined ? null : Date.parse(value);
}

/**
 * The order GET /posts promises, computed from Pozy's truth: by the field (ties by id), the posts without it after the
 * others in either direction, themselves by id.
 */
function ordered(posts: Post[], field: SortField, desc: boolean): string[] {
  const sign = desc ? -1 : 1;
  return [...posts]
    .sort((a, b) => {
      if (field !== 'id') {
        const [x, y] = [sortValue(a, field), sortValue(b, field)];
        if (x === null || y === null) {
          if (x !== y) return x === null ? 1 : -1;
        } else if (x !== y) return sign * (x - y);
      }
      return sign * (a._id < b._id ? -1 : a._id > b._id ? 1 : 0);
    })
    .map((p) => p._id);
}

describe('GET /posts: search, filters and orders over whole posts', () => {
  let harness: SimulatorSpec;
  const world = () => harness.sim.world;
  const get = (path: string) => getJson(harness, path);

  /** Every page of a list, `limit` at a time, failing on a post answered twice. */
  async function walk(query: string, limit = 7, between?: (pageNumber: number) => Promise<void>): Promise<string[]> {
    const ids: string[] = [];
    let cursor: string | null = null;
    for (let pageNumber = 1; ; pageNumber++) {
      const separator = query ? '&' : '';
      const { status, body } = await get(`/posts?${query}${separator}limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`);
      expect(status).toBe(200);
      const page = body as unknown as Page;
      expect(page.data.length).toBeLessThanOrEqual(limit);
      ids.push(...page.data.map((post) => post.id));
      cursor = page.nextCursor;
      if (!cursor) break;
      await between?.(pageNumber);
    }
    expect(ids.length).toBe(new Set(ids).size);
    return ids;
  }

  /** Waits until the mirror holds every post the world has, as the world has it now. */
  async function sweep(): Promise<void> {
    const started = await fetch(`${harness.service.baseUrl}/admin/sweep`, { method: 'POST', headers: ADMIN });
    expect(started.status).toBe(202);
    const { runId } = (await started.json()) as { runId: string };
    const run = await waitFor(
      'the sweep to end',
      async () => {
        const body = (await (await fetch(`${harness.service.baseUrl}/admin/sweep/${runId}`, { headers: ADMIN })).json()) as { status: string };
        return body.status === 'running' ? undefined : body;
      },
      60_000,
    );
    expect(run.status).toBe('succeeded');
  }

  const truth = () => world().listPosts();

  beforeAll(async () => {
    harness = await startSpec('post_queries', { simulator: {} });
    const profile = world().createProfile('Queries');
    const accounts = ['instagram', 'linkedin', 'facebook'].map((platform, i) => world().connectAccount(profile._id, platform, `queries${i}`));
    const [instagram, linkedin, facebook] = accounts.map((a) => a._id);
    const vocabulary = ['launch', 'spring', 'sale', 'news'];
    for (let i = 0; i < POSTS; i++) {
      // Ties on purpose: 40 distinct times for 100 scheduled posts; every sixth post is a draft, without one.
      const scheduledFor = i % 6 === 0 ? undefined : BASE + (i % 40) * MINUTE;
      const title = i % 9 === 0 ? undefined : i % 10 === 3 ? `Zebra crossing ${i}` : i % 10 === 7 ? `Große распродажа ${i}` : `Post ${i}`;
      const content =
        i % 11 === 5 ? `Unser Frühlingsangebot beginnt, Nummer ${i}` : i % 13 === 2 ? `A giraffe appears in post ${i}` : `Plain content ${i}`;
      world().createPost({
        content,
        accountIds: i % 3 === 0 ? [instagram, facebook] : i % 3 === 1 ? [linkedin] : [instagram],
        scheduledFor,
        ...(title === undefined ? {} : { title }),
        tags: i % 5 === 4 ? [] : [vocabulary[i % 4], ...(i % 7 === 0 ? ['evergreen'] : [])],
        hashtags: i % 2 === 0 ? ['#spring'] : ['#coffee'],
        visibility: (['public', 'private', 'unlisted'] as const)[i % 3],
        mediaItems: i % 4 === 0 ? [{ type: 'image', url: `https://media.example/${i}.jpg` }] : [],
        metadata: { crmId: `A-${i}` },
      });
    }
    // Publish some: of those on two accounts, the scheduled ones fail on Facebook.
    for (const [i, post] of truth().entries()) {
      if (post.status !== 'scheduled' || i % 4 === 3) continue;
      world().publishPost(post._id, i % 6 === 3 ? { [facebook]: 'failed' } : {});
    }
    // Half the failures are an expired token, whatever the platform said (an edit Pozy sends no event for).
    truth()
      .filter((post) => post.platforms.some((t) => t.status === 'failed'))
      .forEach((post, k) => world().editTarget(post._id, facebook, { errorCategory: k % 2 === 0 ? 'auth_expired' : 'platform_rejected' }));
    await settled(harness);
    // Drafts and edits send no event: the sweep reads every post.
    await sweep();
  }, 120_000);

  afterAll(async () => {
    await harness?.close();
  });

  describe.each<[SortField, boolean]>([
    ['id', false],
    ['id', true],
    ['scheduledFor', false],
    ['scheduledFor', true],
    ['publishedAt', false],
    ['publishedAt', true],
    ['pozyUpdatedAt', false],
    ['pozyUpdatedAt', true],
  ])('sort=%s, desc %s', (field, desc) => {
    it('pages through every post in that order, without a gap or a repeat', async () => {
      const ids = await walk(`sort=${field}:${desc ? 'desc' : 'asc'}`);

      expect(ids).toEqual(ordered(truth(), field, desc));
    });
  });

  const filters: Array<[string, (post: Post) => boolean]> = [
    ['q=zebra', (p) => words(p.title).has('zebra') || words(p.content).has('zebra')],
    ['q=giraffe', (p) => words(p.title).has('giraffe') || words(p.content).has('giraffe')],
    // Not English, and in either field: German in the content, Russian in the title (case aside).
    ['q=frühlingsangebot', (p) => words(p.content).has('frühlingsangebot')],
    ['q=РАСПРОДАЖА', (p) => words(p.title).has('распродажа')],
    ['q="zebra crossing 13"', (p) => p.title === 'Zebra crossing 13'],
    ['tag=spring', (p) => (p.tags ?? []).includes('spring')],
    ['tag=evergreen,news', (p) => (p.tags ?? []).some((t) => t === 'evergreen' || t === 'news')],
    ['hashtag=%23coffee', (p) => (p.hashtags ?? []).includes('#coffee')],
    ['visibility=unlisted', (p) => p.visibility === 'unlisted'],
    ['errorCategory=auth_expired', (p) => p.platforms.some((t) => t.errorCategory === 'auth_expired')],
    ['hasMedia=true', (p) => (p.mediaItems ?? []).length > 0],
    ['hasMedia=false', (p) => (p.mediaItems ?? []).length === 0],
    [
      `scheduledFrom=${new Date(BASE + 10 * MINUTE).toISOString()}&scheduledTo=${new Date(BASE + 20 * MINUTE).toISOString()}`,
      (p) => p.scheduledFor !== undefined && Date.parse(p.scheduledFor) >= BASE + 10 * MINUTE && Date.parse(p.scheduledFor) <= BASE + 20 * MINUTE,
    ],
  ];

  it.each(filters)('%s: exactly the matching posts, paged to the end', async (filter, matches) => {
    const expected = truth().filter(matches);
    expect(expected.length).toBeGreaterThan(0);
    expect(expected.length).toBeLessThan(POSTS);

    expect(await walk(filter, 5)).toEqual(ordered(expected, 'id', false));
  });

  it('publishedFrom/To: the posts published in that window, in publishedAt order', async () => {
    const published = truth()
      .filter((p) => p.publishedAt !== undefined)
      .map((p) => Date.parse(p.publishedAt!))
      .sort((a, b) => a - b);
    expect(published.length).toBeGreaterThan(4);
    const [from, to] = [published[1], published[published.length - 2]];
    const expected = truth().filter((p) => p.publishedAt !== undefined && Date.parse(p.publishedAt) >= from && Date.parse(p.publishedAt) <= to);

    const ids = await walk(`publishedFrom=${new Date(from).toISOString()}&publishedTo=${new Date(to).toISOString()}&sort=publishedAt:desc`, 4);

    expect(ids).toEqual(ordered(expected, 'publishedAt', true));
  });

  it("a search's next pages ask the planner nothing more: its estimate is kept", async () => {
    const db = harness.service.app.get(QueryPool).db;
    const executeQuery = db.executeQuery.bind(db);
    const explained: string[] = [];
    const spy = jest.spyOn(db, 'executeQuery').mockImplementation((query: CompiledQuery | Compilable, ...rest) => {
      const text = 'compile' in query ? query.compile().sql : query.sql;
      if (text.startsWith('EXPLAIN')) explained.push(text);
      return executeQuery(query, ...rest);
    });
    try {
      const expected = truth().filter((p) => words(p.title).has('giraffe') || words(p.content).has('giraffe'));
      expect(expected.length).toBeGreaterThan(4);
      const started = Date.now();
      // Spelled as no other test does, so no estimate is kept from before.
      const ids = await walk('q=GiRaFfE', 1);
      const elapsedMs = Date.now() - started;

      expect(ids).toEqual(ordered(expected, 'id', false));
      // One page per post: the search's estimate, and the table's size, asked once per 10 s they are kept (so once,
      // unless the machine is slow enough for the walk to outlast that), not once per page.
      expect(explained.length).toBeGreaterThanOrEqual(1);
      expect(explained.length).toBeLessThanOrEqual(2 * Math.ceil(elapsedMs / 10_000));
      expect(explained.length).toBeLessThan(ids.length);
    } finally {
      spy.mockRestore();
    }
  });

  it('a filter and an order together: tag=sale by scheduledFor, newest first', async () => {
    const expected = truth().filter((p) => (p.tags ?? []).includes('sale'));

    expect(await walk('tag=sale&sort=scheduledFor:desc', 3)).toEqual(ordered(expected, 'scheduledFor', true));
  });

  it('while posts change between pages: no post is answered twice, and none that kept its place is missed', async () => {
    const before = truth();
    const accountId = before[0].platforms.map((t) => (typeof t.accountId === 'string' ? t.accountId : t.accountId._id))[0];
    let created = 0;
    const ids = await walk('sort=scheduledFor:desc', 6, async (pageNumber) => {
      if (pageNumber > 4) return;
      // New posts land before and after the cursor; scheduled posts publish (their scheduledFor stays); one is cancelled.
      world().createPost({ content: `new early ${pageNumber}`, accountIds: [accountId], scheduledFor: BASE - pageNumber * MINUTE });
      world().createPost({ content: `new late ${pageNumber}`, accountIds: [accountId], scheduledFor: BASE + 100 * MINUTE + pageNumber });
      created += 2;
      const scheduled = truth().filter((p) => p.status === 'scheduled');
      world().publishPost(scheduled[0]._id);
      world().cancelPost(scheduled[scheduled.length - 1]._id);
      await settled(harness);
    });

    // Every post that existed before the walk keeps its scheduledFor: each one is answered exactly once, in order.
    const seen = new Set(ids);
    expect(before.filter((p) => !seen.has(p._id)).map((p) => p._id)).toEqual([]);
    expect(ids.length).toBeGreaterThanOrEqual(before.length);
    expect(ids.length).toBeLessThanOrEqual(before.length + created);
    const old = new Set(before.map((p) => p._id));
    expect(ids.filter((id) => old.has(id))).toEqual(ordered(before, 'scheduledFor', true));
  });

  it('fields= answers only the fields asked for, on lists and on one post', async () => {
    const list = await get('/posts?fields=id,title,tags&limit=3');
    expect(list.status).toBe(200);
    for (const post of (list.body as unknown as Page).data) expect(Object.keys(post).sort()).toEqual(['id', 'tags', 'title']);

    const id = truth()[0]._id;
    expect(await get(`/posts/${id}?fields=metadata,sequence`)).toEqual({
      status: 200,
      body: { metadata: truth()[0].metadata, sequence: expect.any(Number) as number },
    });
  });

  it.each([
    ['/posts?sort=title', 'sort', /sort must be id, scheduledFor, publishedAt or pozyUpdatedAt/],
    ['/posts?sort=scheduledFor:sideways', 'sort', /sort must be/],
    ['/posts?tag=', 'tag', /tag must not hold an empty item/],
    ['/posts?tag=a,,b', 'tag', /tag must not hold an empty item/],
    ['/posts?hashtag=' + 'x'.repeat(101), 'hashtag', /hashtag/],
    ['/posts?hasMedia=maybe', 'hasMedia', /hasMedia must be a boolean/],
    ['/posts?visibility=' + 'v'.repeat(51), 'visibility', /visibility must be shorter/],
    ['/posts?errorCategory=' + 'e'.repeat(51), 'errorCategory', /errorCategory must be shorter/],
    ['/posts?scheduledFrom=yesterday', 'scheduledFrom', /scheduledFrom must be an ISO 8601 date/],
    ['/posts?publishedTo=2027-13-45T00:00:00Z', 'publishedTo', /publishedTo must be an ISO 8601 date/],
    ['/posts?q=' + 'q'.repeat(201), 'q', /q must be shorter/],
    ['/posts?fields=id,bogus', 'fields', /fields must name fields of a post/],
    ['/posts?fields=', 'fields', /fields must not hold an empty item/],
    ['/posts/66aa01f3c2b1e4d5f6a7b8c9?fields=nope', 'fields', /fields must name fields of a post/],
    ['/accounts?fields=nope', 'fields', /fields must name fields of an account/],
    ['/accounts?enabled=perhaps', 'enabled', /enabled must be a boolean/],
  ])('GET %s answers 400 naming %s', async (path, _parameter, message) => {
    const { status, body } = await get(path);

    expect(status).toBe(400);
    expect(String(body.message)).toMatch(message);
  });

  it('a cursor from one order is refused in another, naming the order it was made for', async () => {
    const first = (await get('/posts?sort=scheduledFor:desc&limit=2')).body as unknown as Page;

    const { status, body } = await get(`/posts?sort=publishedAt:desc&cursor=${first.nextCursor}`);

    expect(status).toBe(400);
    expect(String(body.message)).toMatch(/cursor was made for sort=scheduledFor:desc/);
  });

  it('GET /accounts: q finds a part of the username or display name, case aside; enabled filters', async () => {
    const accounts = world().listAccounts();
    const { body } = await get('/accounts?q=QUERIES1');
    expect((body as unknown as Page).data.map((a) => a.id)).toEqual(accounts.filter((a) => a.username === 'queries1').map((a) => a._id));
    expect(((await get('/accounts?q=queries&enabled=true')).body as unknown as Page).data.map((a) => a.id).sort()).toEqual(
      accounts
        .filter((a) => a.enabled)
        .map((a) => a._id)
        .sort(),
    );
    expect(((await get('/accounts?q=%25')).body as unknown as Page).data).toEqual([]);
  });
});
