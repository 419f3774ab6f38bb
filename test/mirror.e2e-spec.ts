import { plainToInstance } from 'class-transformer';
import { randomUUID } from 'node:crypto';
import { PostMirrorRepository } from '../src/mirror/posts/post-mirror.repository';
import { PozyPostDto } from '../src/pozy/dto/pozy-post.dto';
import { WorkerService } from '../src/queue/worker.service';
import type { Account, PozyEvent } from '../simulator/world/pozy-shapes';
import { apiCalls, backlog, HARNESS_ADMIN_TOKEN, settled } from './support/harness';
import { getJson } from './support/http';
import { mirrorDifferences } from '../simulator/mirror-check';
import { deliver } from './support/pozy-events';
import { waitFor } from './support/service';
import { SimulatorSpec, startSpec } from './support/spec';
import { DEFAULT_WORKSPACE } from '../src/common/workspace-id';

const POST_ROUTE = 'GET /v1/posts/:postId';

/** What GET /posts/:id and GET /accounts/:id answer, as far as these tests read it. */
interface Resource {
  id: string;
  status: string;
  content: string;
  platforms: Array<{ status: string }>;
  profileIds: string[];
  pozyUpdatedAt: string;
  lastEventAt: string;
  syncedAt: string;
  deletedAt: string | null;
  removedAt: string | null;
}
interface Page {
  data: Resource[];
  nextCursor: string | null;
}

describe('the mirror: reconcile from the Pozy simulator through the real receiver', () => {
  let harness: SimulatorSpec;
  const world = () => harness.sim.world;

  /** A profile with `n` connected accounts, settled in the mirror. */
  async function profileWithAccounts(n: number): Promise<{ profileId: string; accounts: Account[] }> {
    const profile = world().createProfile(`Brand ${randomUUID().slice(0, 6)}`);
    const accounts = Array.from({ length: n }, (_, i) =>
      world().connectAccount(profile._id, ['linkedin', 'instagram', 'twitter', 'threads', 'bluesky'][i % 5], `user${i}`),
    );
    await settled(harness);
    return { profileId: profile._id, accounts };
  }

  beforeAll(async () => {
    harness = await startSpec('mirror', { simulator: {} });
  });

  afterAll(async () => {
    await harness?.close();
  });

  afterEach(async () => {
    harness.sim.setFaults({ api429Rate: 0, api5xxRate: 0, apiTimeoutRate: 0, apiResetRate: 0 });
    harness.sim.setWebhookUrl(`${harness.service.baseUrl}/webhooks/pozy`);
  });

  it('mirrors posts and accounts exactly as Pozy shows them', async () => {
    const { accounts } = await profileWithAccounts(3);
    const post = world().createPost({ content: 'Spring sale', accountIds: accounts.map((a) => a._id), scheduledFor: Date.now() + 3_600_000 });
    world().publishPost(post._id, { [accounts[0]._id]: 'published', [accounts[1]._id]: 'published', [accounts[2]._id]: 'failed' });

    await settled(harness);

    expect(await mirrorDifferences(harness.service.pool, world(), harness.seen)).toEqual([]);
    const { body } = await getJson<Resource>(harness, `/posts/${post._id}`);
    expect(body).toMatchObject({ id: post._id, status: 'partial', content: 'Spring sale', deletedAt: null });
    expect(body.platforms.map((t) => t.status)).toEqual(['published', 'published', 'failed']);
    expect(body.profileIds).toEqual([accounts[0].profileId._id]);
    expect(new Date(body.syncedAt).getTime()).toBeGreaterThan(0);
    expect(new Date(body.lastEventAt).getTime()).toBeGreaterThan(0);
  });

  // The two tests of the version-guard article docs/pozy-api.md lists under Sources.
  describe("the article's two tests, through the receiver", () => {
    it('an older event delivered after a newer one leaves the newer state', async () => {
      const { accounts } = await profileWithAccounts(1);
      harness.sim.setWebhookUrl(undefined);
      const events: PozyEvent[] = [];
      const stop = world().onEvent((e) => events.push(e));
      const post = world().createPost({ content: 'v42', accountIds: [accounts[0]._id], scheduledFor: Date.now() + 60_000 });
      world().publishPost(post._id);
      stop();
      const [scheduled, , published] = events;
      expect([scheduled.event, published.event]).toEqual(['post.scheduled', 'post.published']);

      await deliver(harness.service.baseUrl, published as never);
      await settled(harness);
      await deliver(harness.service.baseUrl, scheduled as never);
      await settled(harness);

      const { body } = await getJson<Resource>(harness, `/posts/${post._id}`);
      expect(body.status).toBe('published');
      expect(body.pozyUpdatedAt).toBe(world().getPost(post._id)!.updatedAt);
      expect(body.lastEventAt).toBe(published.timestamp);
    });

    it('the same event delivered twice does not touch the row', async () => {
      const { accounts } = await profileWithAccounts(1);
      harness.sim.setWebhookUrl(undefined);
      const events: PozyEvent[] = [];
      const stop = world().onEvent((e) => events.push(e));
      const post = world().createPost({ content: 'once', accountIds: [accounts[0]._id], scheduledFor: Date.now() + 60_000 });
      stop();
      await deliver(harness.service.baseUrl, events[0] as never);
      await settled(harness);
      const row = async () =>
        (await harness.service.pool.query<object>('SELECT xmin::text, synced_at, read_id FROM post WHERE id = $1', [post._id])).rows[0];
      const before = await row();

      const again = await deliver(harness.service.baseUrl, events[0] as never);

      expect(again.body.duplicate).toBe(true);
      // Nothing is pending, so nothing will come to touch the row later either.
      expect(await backlog(harness.service.pool)).toBe(0);
      expect(await row()).toEqual(before);
    });
  });

  it('keeps the newer state when an older read finishes last', async () => {
    const { accounts } = await profileWithAccounts(1);
    const post = world().createPost({ content: 'old', accountIds: [accounts[0]._id], scheduledFor: Date.now() + 60_000 });
    await settled(harness);
    const older = plainToInstance(PozyPostDto, world().getPost(post._id));
    world().editPost(post._id, { content: 'new' });
    const newer = plainToInstance(PozyPostDto, world().getPost(post._id));
    const repository = harness.service.app.get(PostMirrorRepository);
    const started = Date.now();

    // The newer read started later and finished first; the older one arrives after it.
    expect(
      (await repository.write(DEFAULT_WORKSPACE, newer, { readId: randomUUID(), startedAt: new Date(started + 20), lastEventAt: null })).outcome,
    ).toBe('written');
    expect(
      (await repository.write(DEFAULT_WORKSPACE, older, { readId: randomUUID(), startedAt: new Date(started + 10), lastEventAt: null })).outcome,
    ).toBe('stale');
    // An old version never wins, even from a read that started later.
    expect(
      (await repository.write(DEFAULT_WORKSPACE, older, { readId: randomUUID(), startedAt: new Date(started + 30), lastEventAt: null })).outcome,
    ).toBe('stale');

    expect((await getJson<Resource>(harness, `/posts/${post._id}`)).body).toMatchObject({ content: 'new', pozyUpdatedAt: newer.updatedAt });
  });

  it('reads a burst of 20 events for one post with at most 2 API calls', async () => {
    const { accounts } = await profileWithAccounts(19);
    const post = world().createPost({ content: 'burst', accountIds: accounts.map((a) => a._id), scheduledFor: Date.now() + 60_000 });
    await settled(harness);
    const before = apiCalls(harness, POST_ROUTE);

    world().publishPost(post._id); // 19 post.platform.published, then post.published
    await settled(harness);

    expect(apiCalls(harness, POST_ROUTE) - before).toBeLessThanOrEqual(2);
    expect(await mirrorDifferences(harness.service.pool, world(), { postIds: [post._id], profileIds: [] })).toEqual([]);
  });

  it('marks a deleted post deleted, and keeps it queryable with includeDeleted', async () => {
    const { accounts } = await profileWithAccounts(1);
    const post = world().createPost({ content: 'gone soon', accountIds: [accounts[0]._id], scheduledFor: Date.now() + 60_000 });
    world().publishPost(post._id);
    await settled(harness);

    world().deletePost(post._id); // post.platform.deleted for the published target; Pozy then answers 404
    await settled(harness);

    const { body } = await getJson<Resource>(harness, `/posts/${post._id}`);
    expect(body.deletedAt).not.toBeNull();
    expect((await getJson<Page>(harness, '/posts?limit=500')).body.data.map((p) => p.id)).not.toContain(post._id);
    expect((await getJson<Page>(harness, '/posts?limit=500&includeDeleted=true')).body.data.map((p) => p.id)).toContain(post._id);
    expect((await getJson<Page>(harness, '/posts?limit=500&status=deleted')).body.data.map((p) => p.id)).toContain(post._id);
  });

  it('follows an account that disconnects, and one removed from its profile', async () => {
    const { profileId, accounts } = await profileWithAccounts(2);
    world().disconnectAccount(accounts[0]._id, { intentional: false });
    await settled(harness);
    expect((await getJson<Resource>(harness, `/accounts/${accounts[0]._id}`)).body).toMatchObject({
      isActive: false,
      needsReconnection: true,
      removedAt: null,
    });

    world().removeAccount(accounts[1]._id); // no event: seen at the profile's next read
    world().connectAccount(profileId, 'tiktok', 'newcomer');
    await settled(harness);

    expect((await getJson<Resource>(harness, `/accounts/${accounts[1]._id}`)).body.removedAt).not.toBeNull();
    expect((await getJson<Page>(harness, `/accounts?profileId=${profileId}`)).body.data).toHaveLength(2);
    expect(await mirrorDifferences(harness.service.pool, world(), { postIds: [], profileIds: [profileId] })).toEqual([]);
  });

  it('stores a test event from Pozy and changes nothing', async () => {
    const mirrorBefore = (await harness.service.pool.query('SELECT count(*)::int AS n, max(synced_at) AS t FROM post')).rows[0];
    const response = await fetch(`${harness.sim.url}/v1/webhooks/test`, {
      method: 'POST',
      headers: { authorization: `Bearer ${harness.sim.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ webhookId: harness.sim.webhookId }),
    });
    expect(response.status).toBe(200);

    const { rows } = await harness.service.pool.query("SELECT test FROM pozy_event WHERE type = 'webhook.test'");
    expect(rows).toEqual([{ test: true }]);
    expect(await backlog(harness.service.pool)).toBe(0);
    expect((await harness.service.pool.query('SELECT count(*)::int AS n, max(synced_at) AS t FROM post')).rows[0]).toEqual(mirrorBefore);
  });

  it.each([
    ['429 (after Retry-After)', { api429Rate: 1 }, '429'],
    ['5xx', { api5xxRate: 1 }, '500'],
    ['a timeout', { apiTimeoutRate: 1 }, 'timeout'],
    ['a connection reset', { apiResetRate: 1 }, 'reset'],
  ])('retries %s within the job, then mirrors the post', async (_name, faults, label) => {
    const { accounts } = await profileWithAccounts(1);
    const worker = harness.service.app.get(WorkerService);
    const failedBefore = worker.stats.failed;
    harness.sim.setFaults(faults);
    const post = world().createPost({ content: 'through faults', accountIds: [accounts[0]._id], scheduledFor: Date.now() + 60_000 });

    await waitFor(`a ${label} from Pozy`, async () => ((harness.sim.stats().api.byRoute[POST_ROUTE]?.[label] ?? 0) > 0 ? true : undefined));
    harness.sim.setFaults({ api429Rate: 0, api5xxRate: 0, apiTimeoutRate: 0, apiResetRate: 0 });
    await settled(harness);

    expect((await getJson<Resource>(harness, `/posts/${post._id}`)).body).toMatchObject({ id: post._id, status: 'scheduled' });
    // The client's own retries got through: no job attempt failed.
    expect(worker.stats.failed).toBe(failedBefore);
  });

  it('skips the read for a late event the last read already covers, and reads on an admin resync', async () => {
    const { accounts } = await profileWithAccounts(1);
    const post = world().createPost({ content: 'late', accountIds: [accounts[0]._id], scheduledFor: Date.now() + 60_000 });
    await settled(harness);
    const reads = () => apiCalls(harness, POST_ROUTE);
    const before = reads();

    // Generated an hour ago, delivered now (an old retry): the mirror's last read began long after it.
    const late = { id: randomUUID(), event: 'post.scheduled', timestamp: new Date(Date.now() - 3_600_000).toISOString(), post: { id: post._id } };
    expect((await deliver(harness.service.baseUrl, late as never)).body).toMatchObject({ duplicate: false, reconcile: `post:${post._id}` });
    await settled(harness);
    expect(reads()).toBe(before);

    world().editPost(post._id, { content: 'edited without an event' });
    const resync = await fetch(`${harness.service.baseUrl}/admin/resync/posts/${post._id}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${HARNESS_ADMIN_TOKEN}` },
    });
    expect(resync.status).toBe(202);
    await settled(harness);

    expect(reads()).toBe(before + 1);
    expect((await getJson<Resource>(harness, `/posts/${post._id}`)).body.content).toBe('edited without an event');
  });

  it('brings back a post first seen as deleted once a later read finds it', async () => {
    const { accounts } = await profileWithAccounts(1);
    const post = world().createPost({ content: 'there after all', accountIds: [accounts[0]._id] }); // a draft: no event
    const repository = harness.service.app.get(PostMirrorRepository);
    const t = Date.now();
    const read = (ms: number) => ({ readId: randomUUID(), startedAt: new Date(t + ms), lastEventAt: null });
    const alive = plainToInstance(PozyPostDto, world().getPost(post._id));

    // Held first: a 404 for a post the mirror never held writes nothing (see reconcile-edges.e2e-spec.ts).
    expect((await repository.write(DEFAULT_WORKSPACE, alive, read(1))).outcome).toBe('written');
    expect((await repository.markDeleted(DEFAULT_WORKSPACE, post._id, read(10))).outcome).toBe('written');
    expect((await repository.write(DEFAULT_WORKSPACE, alive, read(5))).outcome).toBe('stale');
    expect((await repository.write(DEFAULT_WORKSPACE, alive, read(20))).outcome).toBe('written');

    expect((await getJson<Resource>(harness, `/posts/${post._id}`)).body).toMatchObject({ status: 'draft', deletedAt: null });
  });

  it('pages through every post without gaps or repeats, and filters', async () => {
    const { profileId, accounts } = await profileWithAccounts(3);
    for (let i = 0; i < 23; i += 1) {
      const post = world().createPost({ content: `post ${i}`, accountIds: [accounts[i % 3]._id], scheduledFor: Date.now() + 60_000 });
      if (i % 2 === 0) world().publishPost(post._id);
    }
    await settled(harness);
    const { rows } = await harness.service.pool.query<{ id: string }>('SELECT id FROM post WHERE deleted_at IS NULL ORDER BY id');

    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const { status, body }: { status: number; body: Page } = await getJson<Page>(harness, `/posts?limit=7${cursor ? `&cursor=${cursor}` : ''}`);
      expect(status).toBe(200);
      expect(body.data.length).toBeLessThanOrEqual(7);
      seen.push(...body.data.map((p) => p.id));
      cursor = body.nextCursor;
    } while (cursor);
    expect(seen).toEqual(rows.map((r) => r.id));

    const ids = async (query: string) => (await getJson<Page>(harness, `/posts?limit=500&${query}`)).body.data.map((p) => p.id);
    const truth = world().snapshot().posts;
    const mine = truth.filter((p) =>
      accounts.some((a) => p.platforms.some((t) => (typeof t.accountId === 'string' ? t.accountId : t.accountId._id) === a._id)),
    );
    expect((await ids(`profileId=${profileId}`)).sort()).toEqual(mine.map((p) => p._id).sort());
    expect((await ids(`profileId=${profileId}&status=published`)).sort()).toEqual(
      mine
        .filter((p) => p.status === 'published')
        .map((p) => p._id)
        .sort(),
    );
    expect((await ids(`accountId=${accounts[1]._id}`)).sort()).toEqual(
      mine
        .filter((p) => p.platforms.some((t) => typeof t.accountId !== 'string' && t.accountId._id === accounts[1]._id))
        .map((p) => p._id)
        .sort(),
    );
    expect(await ids(`platform=${accounts[0].platform}&profileId=${profileId}`)).toEqual(
      expect.arrayContaining(mine.filter((p) => p.platforms[0].platform === accounts[0].platform).map((p) => p._id)),
    );
    expect(await ids(`updatedSince=${new Date(Date.now() + 60_000).toISOString()}`)).toEqual([]);

    const accountIds = async (query: string) => (await getJson<Page>(harness, `/accounts?limit=500&${query}`)).body.data.map((a) => a.id);
    expect((await accountIds(`profileId=${profileId}`)).sort()).toEqual(accounts.map((a) => a._id).sort());
    expect(await accountIds(`profileId=${profileId}&connected=false`)).toEqual([]);
    expect(await accountIds(`profileId=${profileId}&platform=${accounts[2].platform}`)).toEqual([accounts[2]._id]);
  });

  it('answers sync status with what the mirror holds', async () => {
    await settled(harness);
    type Status = { queue: { pendingReads: number; jobs: number }; mirror: { posts: number }; events: { received: number } };
    const counts = (await harness.service.pool.query('SELECT count(*) FILTER (WHERE deleted_at IS NULL)::int AS posts FROM post')).rows[0];
    // The status is a reading shared for STATUS_CACHE_MS: one taken before the mirror settled may still be answered,
    // so wait for one that holds what the mirror holds now (a status that never agrees fails on the deadline).
    const body = await waitFor(
      'a status read after the mirror settled',
      async () => {
        const status = (await getJson<Status>(harness, '/sync/status')).body;
        return status.queue.pendingReads === 0 && status.queue.jobs === 0 && status.mirror.posts === counts.posts ? status : undefined;
      },
      60_000,
    );

    expect(body.queue).toMatchObject({ pendingReads: 0, jobs: 0 });
    expect(body.mirror.posts).toBe(counts.posts);
    expect(body.events.received).toBeGreaterThan(0);
  });
});
