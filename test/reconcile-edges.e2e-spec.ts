import { randomUUID } from 'node:crypto';
import type { Account } from '../simulator/world/pozy-shapes';
import { apiCalls, Harness, HARNESS_ADMIN_TOKEN, settled } from './support/harness';
import { request } from './support/http';
import { parseMetrics } from './support/metrics';
import { deliver, postEvent } from './support/pozy-events';
import { waitFor } from './support/service';
import { TestSubscriber } from './support/subscriber';
import { SimulatorSpec, startSpec } from './support/spec';

const POST_ROUTE = 'GET /v1/posts/:postId';
const ADMIN = { authorization: `Bearer ${HARNESS_ADMIN_TOKEN}` };
const JSON_ADMIN = { ...ADMIN, 'content-type': 'application/json' };

/** A profile with one connected account, settled in the mirror. */
async function profileWithAccount(harness: Harness): Promise<{ profileId: string; account: Account }> {
  const profile = harness.sim.world.createProfile(`Brand ${randomUUID().slice(0, 6)}`);
  const account = harness.sim.world.connectAccount(profile._id, 'linkedin', 'edge');
  await settled(harness);
  return { profileId: profile._id, account };
}

/**
 * What the mirror answers or tells about a post id: its row as a post (one with a Pozy version; a 404 for a post never
 * held leaves only a tombstone that no endpoint answers), its feed entries, its queued notifications.
 */
async function storedAbout(harness: Harness, postId: string): Promise<{ posts: number; changes: number; notifications: number }> {
  const count = async (sql: string) => Number((await harness.service.pool.query<{ n: string }>(sql, [postId])).rows[0].n);
  return {
    posts: await count('SELECT count(*) AS n FROM post WHERE id = $1 AND pozy_updated_at IS NOT NULL'),
    changes: await count('SELECT count(*) AS n FROM change WHERE resource_id = $1'),
    notifications: await count(`SELECT count(*) AS n FROM notification WHERE resource_key = 'post:' || $1`),
  };
}

/** The post figures of GET /sync/status. */
async function mirrorFigures(harness: Harness): Promise<{ posts: number; deletedPosts: number }> {
  const { body } = await request(harness, '/sync/status');
  const { posts, deletedPosts } = (body as { mirror: { posts: number; deletedPosts: number } }).mirror;
  return { posts, deletedPosts };
}

describe('a post Pozy never had', () => {
  let harness: SimulatorSpec;
  let subscriber: TestSubscriber;

  beforeAll(async () => {
    // A short grace: the event-driven case below waits it out before believing the 404. The figures compared before and
    // after a write are read fresh each time, not a reading shared for STATUS_CACHE_MS that may predate the last test.
    harness = await startSpec('never_existed', { simulator: {}, env: { READ_LAG_GRACE_MS: '500', STATUS_CACHE_MS: '0' } });
    subscriber = await TestSubscriber.start();
    const created = await fetch(`${harness.service.baseUrl}/admin/subscriptions`, {
      method: 'POST',
      headers: JSON_ADMIN,
      body: JSON.stringify({ url: subscriber.url, eventTypes: ['post.changed', 'post.deleted'] }),
    });
    expect(created.status).toBe(201);
  });

  afterAll(async () => {
    await harness?.close();
    await subscriber?.close();
  });

  it('answers an admin resync with 404 unknown_to_pozy, and writes, queues and notifies nothing', async () => {
    const id = 'abcdef0123456789abcdef01';

    const resync = await request(harness, `/admin/resync/posts/${id}`, { method: 'POST', headers: ADMIN });

    expect(resync).toEqual({
      status: 404,
      body: expect.objectContaining({
        statusCode: 404,
        error: 'unknown_to_pozy',
        message: `Pozy does not know post ${id}, and the mirror never held it`,
      }),
    });
    await settled(harness);
    expect((await request(harness, `/posts/${id}`)).status).toBe(404);
    expect(await storedAbout(harness, id)).toEqual({ posts: 0, changes: 0, notifications: 0 });
    const { rows } = await harness.service.pool.query('SELECT key FROM reconcile_request WHERE resource_id = $1', [id]);
    expect(rows).toEqual([]);
  });

  it('still queues a resync of a post Pozy knows (202), and mirrors it', async () => {
    const { account } = await profileWithAccount(harness);
    const post = harness.sim.world.createPost({ content: 'a draft, no event', accountIds: [account._id] });

    const resync = await request(harness, `/admin/resync/posts/${post._id}`, { method: 'POST', headers: ADMIN });

    expect(resync).toEqual({ status: 202, body: { accepted: true, reconcile: `post:${post._id}` } });
    await settled(harness);
    expect(await request(harness, `/posts/${post._id}`)).toMatchObject({ status: 200, body: { id: post._id, status: 'draft', deletedAt: null } });
  });

  it('writes nothing for an event naming a post Pozy answers 404 for, once the grace is over', async () => {
    const id = 'abcdef0123456789abcdef02';
    const figuresBefore = await mirrorFigures(harness);

    expect((await deliver(harness.service.baseUrl, postEvent(id, 'post.published'))).body).toMatchObject({ reconcile: `post:${id}` });
    await settled(harness);

    // Read at once, then again after the grace: a 404 that contradicts a fresh event is not believed at once.
    expect(harness.sim.stats().api.byRoute[POST_ROUTE]?.['404'] ?? 0).toBeGreaterThanOrEqual(2);
    expect((await request(harness, `/posts/${id}`)).status).toBe(404);
    expect(await storedAbout(harness, id)).toEqual({ posts: 0, changes: 0, notifications: 0 });
    expect(subscriber.received.filter((r) => r.json.data.id === id)).toEqual([]);
    // The tombstone the guard keeps is neither a post nor a deleted post of the status figures.
    const { rows: kept } = await harness.service.pool.query('SELECT pozy_updated_at, deleted_at FROM post WHERE id = $1', [id]);
    expect(kept).toEqual([{ pozy_updated_at: null, deleted_at: expect.any(Date) }]);
    expect(await mirrorFigures(harness)).toEqual(figuresBefore);
  });

  it('still marks deleted, and notifies, a post the mirror held that Pozy then deleted', async () => {
    const { account } = await profileWithAccount(harness);
    const post = harness.sim.world.createPost({ content: 'soon gone', accountIds: [account._id], scheduledFor: Date.now() + 3_600_000 });
    await settled(harness);
    harness.sim.world.deletePost(post._id);

    await request(harness, `/admin/resync/posts/${post._id}`, { method: 'POST', headers: ADMIN });
    await settled(harness);

    expect(await request(harness, `/posts/${post._id}`)).toMatchObject({ status: 200, body: { id: post._id, deletedAt: expect.any(String) } });
    await waitFor('the post.deleted notification', async () =>
      subscriber.received.some((r) => r.json.type === 'post.deleted' && r.json.data.id === post._id) ? true : undefined,
    );
  });
});

describe("Pozy's clock lagging ours", () => {
  let harness: SimulatorSpec;
  const LAG_MS = 30_000;

  beforeAll(async () => {
    harness = await startSpec('clock_skew', {
      simulator: { clockOffsetMs: LAG_MS },
      // The default margin: far less than the lag.
      env: { RECONCILE_CLOCK_SKEW_MS: '5000' },
    });
  });

  afterAll(async () => {
    await harness?.close();
  });

  it('reads a change made just after a read, and shows the measured skew', async () => {
    const { account } = await profileWithAccount(harness);
    const post = harness.sim.world.createPost({ content: 'skewed', accountIds: [account._id], scheduledFor: Date.now() + 3_600_000 });
    await settled(harness);
    expect((await request(harness, `/posts/${post._id}`)).body).toMatchObject({ status: 'scheduled' });
    const reads = apiCalls(harness, POST_ROUTE);

    // Pozy dates the cancellation 30 s before our clock's now: by our last read's start, it looks long reflected.
    harness.sim.world.cancelPost(post._id);
    await settled(harness);

    expect(apiCalls(harness, POST_ROUTE)).toBe(reads + 1);
    expect((await request(harness, `/posts/${post._id}`)).body).toMatchObject({ id: post._id, status: 'cancelled' });
    const metrics = parseMetrics(await (await fetch(`${harness.service.baseUrl}/metrics`)).text());
    const skew = metrics.get('pozy_sync_pozy_clock_skew_seconds');
    expect(skew).toBeGreaterThan(LAG_MS / 1000 - 1.5);
    expect(skew).toBeLessThan(LAG_MS / 1000 + 1.5);
  });
});

describe("Pozy's reads lagging its writes", () => {
  let harness: SimulatorSpec;
  const READ_LAG_MS = 1_500;

  beforeAll(async () => {
    harness = await startSpec('read_lag', { simulator: {}, env: { READ_LAG_GRACE_MS: '10000' } });
  });

  afterAll(async () => {
    await harness?.close();
  });

  it('reads a new post again until Pozy finds it, instead of marking it deleted', async () => {
    const { account } = await profileWithAccount(harness);
    harness.sim.setFaults({ apiReadLagMs: READ_LAG_MS });
    const notFoundBefore = harness.sim.stats().api.byRoute[POST_ROUTE]?.['404'] ?? 0;

    const post = harness.sim.world.createPost({ content: 'fresh', accountIds: [account._id], scheduledFor: Date.now() + 3_600_000 });
    await settled(harness);

    // The event's read met the lagging replica's 404 at least once.
    expect(harness.sim.stats().api.byRoute[POST_ROUTE]?.['404'] ?? 0).toBeGreaterThan(notFoundBefore);
    expect(await request(harness, `/posts/${post._id}`)).toMatchObject({ status: 200, body: { id: post._id, status: 'scheduled', deletedAt: null } });
    const { rows } = await harness.service.pool.query<{ type: string }>('SELECT type FROM change WHERE resource_id = $1 ORDER BY id', [post._id]);
    expect(rows.map((r) => r.type)).toEqual(['post.changed']);
    harness.sim.setFaults({ apiReadLagMs: 0 });
  });

  it('reads a profile again until a newly connected account is listed', async () => {
    const { profileId } = await profileWithAccount(harness);
    harness.sim.setFaults({ apiReadLagMs: READ_LAG_MS });

    const account = harness.sim.world.connectAccount(profileId, 'bluesky', 'late-listed');
    await settled(harness);

    expect(await request(harness, `/accounts/${account._id}`)).toMatchObject({ status: 200, body: { id: account._id, removedAt: null } });
    harness.sim.setFaults({ apiReadLagMs: 0 });
  });
});
