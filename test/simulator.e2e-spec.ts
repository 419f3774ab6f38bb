import { createHmac } from 'node:crypto';
import { createServer, IncomingHttpHeaders, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Rng } from '../simulator/faults';
import { PozySimulator, SimulatorOptions } from '../simulator/simulator';
import type { WebhookLogRow } from '../simulator/webhook-sender';
import { PozyWorld } from '../simulator/world';
import {
  Account,
  MEDIA_TYPES,
  META_PLATFORMS,
  PlatformTarget,
  Post,
  PostDetails,
  PozyEvent,
  Recycling,
  UNKNOWN_ACCOUNT_FIELD,
  UNKNOWN_POST_FIELD,
  UNKNOWN_TARGET_FIELD,
} from '../simulator/world/pozy-shapes';
import { waitFor } from './support/service';

const API_KEY = 'sk_test_simulator';
const SECRET = 'whsec_sim_3f9a';
const FIXED_CLOCK = () => Date.UTC(2026, 2, 2, 9, 0, 0);

interface Delivery {
  headers: IncomingHttpHeaders;
  body: Buffer;
  event: PozyEvent;
}

/** A webhook endpoint on loopback that records every delivery; `answer` picks each reply from its arrival index. */
class Receiver {
  readonly deliveries: Delivery[] = [];
  answer: (index: number, delivery: Delivery) => number | Promise<number> = () => 200;
  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(): Promise<Receiver> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const receiver = new Receiver(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks/pozy`);
    server.on('request', (request: IncomingMessage, response: ServerResponse) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const body = Buffer.concat(chunks);
        const delivery: Delivery = { headers: request.headers, body, event: JSON.parse(body.toString('utf8')) as PozyEvent };
        const index = receiver.deliveries.push(delivery) - 1;
        void Promise.resolve(receiver.answer(index, delivery)).then((status) => {
          response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ index }));
        });
      });
    });
    return receiver;
  }

  of(eventId: string): Delivery[] {
    return this.deliveries.filter((d) => d.event.id === eventId);
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

interface Answer<T> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

async function api<T = Record<string, unknown>>(
  sim: PozySimulator,
  path: string,
  init: RequestInit & { key?: string | null } = {},
): Promise<Answer<T>> {
  const key = init.key === undefined ? API_KEY : init.key;
  const headers: Record<string, string> = { ...(init.headers as Record<string, string> | undefined) };
  if (key !== null) headers.authorization = `Bearer ${key}`;
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${sim.url}${path}`, { ...init, headers });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: (text ? JSON.parse(text) : undefined) as T, text };
}

const hmac = (body: Buffer | string) => createHmac('sha256', SECRET).update(body).digest('hex');

/** Every value in the tree, to check that optional fields are omitted rather than null. */
function hasNull(value: unknown): boolean {
  if (value === null) return true;
  if (typeof value === 'object') return Object.values(value).some(hasNull);
  return false;
}

describe('Pozy simulator', () => {
  const running: PozySimulator[] = [];
  const receivers: Receiver[] = [];

  const start = async (options: Partial<SimulatorOptions> = {}) => {
    const sim = await PozySimulator.start({ apiKey: API_KEY, seed: 7, ...options });
    running.push(sim);
    return sim;
  };
  const receiver = async () => {
    const r = await Receiver.start();
    receivers.push(r);
    return r;
  };

  afterEach(async () => {
    await Promise.all(running.splice(0).map((sim) => sim.stop()));
    await Promise.all(receivers.splice(0).map((r) => r.close()));
  });

  /** A profile with an instagram and a linkedin account. */
  function workspace(world: PozyWorld) {
    const profile = world.createProfile('Acme Shop');
    const instagram = world.connectAccount(profile._id, 'instagram', 'acme.shop');
    const linkedin = world.connectAccount(profile._id, 'linkedin', 'acme-shop');
    return { profile, instagram, linkedin };
  }

  describe('world', () => {
    it('replays exactly from a seed: same steps, same snapshot, same events', () => {
      const run = (seed: number) => {
        const world = new PozyWorld({ seed, clock: FIXED_CLOCK });
        const events: PozyEvent[] = [];
        world.onEvent((e) => events.push(e));
        world.seedWorld({ profiles: 2, accountsPerProfile: 3, posts: 10 });
        const steps = new Rng(99);
        const actions = Array.from({ length: 400 }, () => world.randomStep(steps).action);
        return { snapshot: world.snapshot(), events, actions };
      };
      const a = run(5);
      const b = run(5);
      const c = run(6);

      expect(b.snapshot).toEqual(a.snapshot);
      expect(b.events.map((e) => e.id)).toEqual(a.events.map((e) => e.id));
      expect(JSON.stringify(b.events)).toBe(JSON.stringify(a.events));
      expect(c.events.map((e) => e.id)).not.toEqual(a.events.map((e) => e.id));
      // The steps cover the realistic mix, not just one kind of change.
      expect(new Set(a.actions)).toEqual(
        new Set([
          'createScheduledPost',
          'createDraft',
          'publishPost',
          'cancelPost',
          'editPost',
          'deletePlatformPost',
          'deletePost',
          'disconnectAccount',
          'reconnectAccount',
          'connectAccount',
          'removeAccount',
        ]),
      );
      expect(a.snapshot.deletedPostIds.length).toBeGreaterThan(0);
      expect(a.snapshot.removedAccountIds.length).toBeGreaterThan(0);
      for (const event of a.events) expect(event.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      for (const post of a.snapshot.posts) expect(post._id).toMatch(/^[0-9a-f]{24}$/);
      expect(hasNull(a.events)).toBe(false);
    });

    it('never repeats a millisecond: event timestamps and updatedAt strictly increase even on a stopped clock', () => {
      const world = new PozyWorld({ seed: 1, clock: FIXED_CLOCK });
      const events: PozyEvent[] = [];
      world.onEvent((e) => events.push(e));
      const { instagram } = workspace(world);
      const post = world.createPost({ content: 'v1', accountIds: [instagram._id], scheduledFor: '2026-03-03T09:00:00Z' });
      const versions = [post.updatedAt];
      for (const content of ['v2', 'v3', 'v4']) versions.push(world.editPost(post._id, { content }).updatedAt);
      versions.push(world.publishPost(post._id).updatedAt);

      const times = events.map((e) => Date.parse(e.timestamp));
      expect(times.every((t, i) => i === 0 || t > times[i - 1])).toBe(true);
      expect(versions.every((v, i) => i === 0 || Date.parse(v) > Date.parse(versions[i - 1]))).toBe(true);
    });

    it('emits the publish sequence with the webhook shapes: per target while publishing, then the rollup', () => {
      const world = new PozyWorld({ seed: 3 });
      const events: PozyEvent[] = [];
      world.onEvent((e) => events.push(e));
      const { instagram, linkedin } = workspace(world);
      events.length = 0;
      const post = world.createPost({ content: 'Spring sale', accountIds: [linkedin._id, instagram._id], scheduledFor: '2026-03-02T09:00:00Z' });
      world.publishPost(post._id, { [instagram._id]: 'failed' });

      expect(events.map((e) => e.event)).toEqual(['post.scheduled', 'post.platform.published', 'post.platform.failed', 'post.partial']);
      const [scheduled, published, failed, partial] = events;
      expect(Object.keys(published)).toEqual(['id', 'event', 'timestamp', 'post', 'platform', 'account']);
      expect(scheduled.post).toEqual({
        id: post._id,
        content: 'Spring sale',
        status: 'scheduled',
        scheduledFor: '2026-03-02T09:00:00.000Z',
        platforms: [
          { platform: 'linkedin', status: 'pending', accountId: linkedin._id },
          { platform: 'instagram', status: 'pending', accountId: instagram._id },
        ],
      });
      expect(published.post?.status).toBe('publishing');
      expect(published.post?.platforms[0]).toEqual({
        platform: 'linkedin',
        status: 'published',
        accountId: linkedin._id,
        platformPostId: expect.stringMatching(/^urn:li:share:\d+$/),
        publishedUrl: expect.stringMatching(/^https:\/\/www\.linkedin\.com\/feed\/update\/urn:li:share:\d+$/),
      });
      expect(published.platform).toEqual({
        name: 'linkedin',
        status: 'published',
        platformPostId: published.post?.platforms[0].platformPostId,
        publishedUrl: published.post?.platforms[0].publishedUrl,
      });
      expect(published.account).toEqual({ accountId: linkedin._id, platform: 'linkedin', username: 'acme-shop', displayName: 'Acme Shop' });
      expect(failed.post?.status).toBe('publishing');
      expect(failed.platform).toMatchObject({ name: 'instagram', status: 'failed', error: expect.any(String), errorCategory: expect.any(String) });
      expect(failed.post?.platforms[1]).toMatchObject({ platform: 'instagram', status: 'failed', error: failed.platform?.error });
      expect(partial.post).toMatchObject({ id: post._id, status: 'partial', publishedAt: partial.timestamp });
      expect(partial.platform).toBeUndefined();
      expect(hasNull(events)).toBe(false);
    });

    it('emits account events with profileId, disconnection type and reason', () => {
      const world = new PozyWorld({ seed: 4 });
      const events: PozyEvent[] = [];
      world.onEvent((e) => events.push(e));
      const { profile, instagram } = workspace(world);
      const dead = world.disconnectAccount(instagram._id);
      const back = world.reconnectAccount(instagram._id);
      world.disconnectAccount(instagram._id, { intentional: true });

      expect(events.map((e) => e.event)).toEqual([
        'account.connected',
        'account.connected',
        'account.disconnected',
        'account.connected',
        'account.disconnected',
      ]);
      expect(events[2].account).toEqual({
        accountId: instagram._id,
        profileId: profile._id,
        platform: 'instagram',
        username: 'acme.shop',
        displayName: 'Acme Shop',
        disconnectionType: 'unintentional',
        reason: 'Token expired or revoked',
      });
      expect(events[4].account).toMatchObject({ disconnectionType: 'intentional' });
      expect([dead.isActive, dead.needsReconnection, back.isActive, back.needsReconnection]).toEqual([false, true, true, false]);
      expect(world.getAccount(instagram._id)).toMatchObject({ isActive: false, needsReconnection: false });
    });

    it('deletes: a platform post fires post.platform.deleted; a deleted post fires one per live target and disappears', () => {
      const world = new PozyWorld({ seed: 5 });
      const events: PozyEvent[] = [];
      const { instagram, linkedin } = workspace(world);
      const post = world.createPost({ content: 'x', accountIds: [instagram._id, linkedin._id] });
      world.publishPost(post._id);
      const draft = world.createPost({ content: 'draft', accountIds: [linkedin._id] });
      world.onEvent((e) => events.push(e));

      const after = world.deletePlatformPost(post._id, instagram._id);
      expect(after.status).toBe('published');
      expect(after.platforms[0]).toMatchObject({ status: 'cancelled', removedFromPlatformAt: events[0].timestamp });
      expect(events[0]).toMatchObject({
        event: 'post.platform.deleted',
        platform: { name: 'instagram', status: 'deleted', deletedAt: events[0].timestamp },
      });

      world.deletePost(post._id);
      world.deletePost(draft._id);
      expect(events.map((e) => e.event)).toEqual(['post.platform.deleted', 'post.platform.deleted']);
      expect(events[1].post).toMatchObject({ id: post._id, status: 'cancelled' });
      expect(world.getPost(post._id)).toBeUndefined();
      expect(world.snapshot()).toMatchObject({ posts: [], deletedPostIds: [post._id, draft._id] });
      expect(() => world.editPost(post._id, { content: 'y' })).toThrow(/No post/);
    });

    it('seedExisting: a workspace that was there before, in a realistic mix, without events; changes then go on from now', () => {
      const world = new PozyWorld({ seed: 8 });
      const events: PozyEvent[] = [];
      world.onEvent((e) => events.push(e));
      const before = Date.now();
      world.seedExisting({ posts: 3_000, accounts: 43 });
      const now = Date.now();

      expect(events).toEqual([]);
      const { posts, accounts } = world.snapshot();
      expect(posts).toHaveLength(3_000);
      expect(accounts).toHaveLength(43);
      // About 8 accounts a profile, each on another platform.
      expect(world.listProfiles()).toHaveLength(6);
      for (const profile of world.listProfiles()) {
        const platforms = accounts.filter((a) => a.profileId._id === profile._id).map((a) => a.platform);
        expect(platforms.length).toBeGreaterThanOrEqual(7);
        expect(new Set(platforms).size).toBe(platforms.length);
      }
      expect(accounts.some((a) => !a.isActive && a.needsReconnection)).toBe(true);

      const created = posts.map((p) => Date.parse(p.createdAt));
      expect(created.every((t, i) => i === 0 || t > created[i - 1])).toBe(true);
      expect(created[0]).toBeLessThan(before - 300 * 86_400_000);
      for (const post of posts) {
        const updated = Date.parse(post.updatedAt);
        expect([post._id, updated >= Date.parse(post.createdAt) && updated <= now]).toEqual([post._id, true]);
        if (post.status === 'scheduled') expect(Date.parse(post.scheduledFor!)).toBeGreaterThan(now);
        for (const target of post.platforms) {
          for (const time of [target.publishedAt, target.removedFromPlatformAt]) if (time) expect(Date.parse(time)).toBeLessThanOrEqual(now);
        }
      }
      const byStatus = new Map<string, number>();
      for (const post of posts) byStatus.set(post.status, (byStatus.get(post.status) ?? 0) + 1);
      expect([...byStatus.keys()].sort()).toEqual(['cancelled', 'draft', 'failed', 'partial', 'published', 'scheduled']);
      expect(byStatus.get('published')).toBeGreaterThan(1_500);
      const targets = posts.flatMap((p) => p.platforms);
      const failed = targets.filter((t) => t.status === 'failed');
      expect(failed.length).toBeGreaterThan(0);
      for (const target of failed)
        expect(target).toMatchObject({ errorMessage: expect.any(String), errorCategory: expect.any(String), errorSource: expect.any(String) });
      const removed = targets.filter((t) => t.removedFromPlatformAt);
      expect(removed.length).toBeGreaterThan(0);
      for (const target of removed) expect(target).toMatchObject({ status: 'cancelled', platformPostId: expect.any(String) });
      expect(hasNull(posts)).toBe(false);

      // Every change works on what was seeded, with its events, after everything seeded.
      const latest = Math.max(...posts.map((p) => Date.parse(p.updatedAt)), ...posts.map((p) => Date.parse(p.createdAt)));
      const scheduled = posts.find(
        (p) => p.status === 'scheduled' && p.platforms.every((t) => typeof t.accountId !== 'string' && t.accountId.isActive),
      )!;
      const published = posts.find((p) => p.status === 'published' && p.platforms.length > 1)!;
      const active = accounts.find((a) => a.isActive)!;
      expect(world.publishPost(scheduled._id).status).toBe('published');
      world.deletePost(published._id);
      world.disconnectAccount(active._id);
      expect(world.getPost(published._id)).toBeUndefined();
      expect(events.map((e) => e.event)).toEqual([
        ...scheduled.platforms.map(() => 'post.platform.published'),
        'post.published',
        ...published.platforms.filter((t) => t.status === 'published').map(() => 'post.platform.deleted'),
        'account.disconnected',
      ]);
      const times = events.map((e) => Date.parse(e.timestamp));
      expect(times[0]).toBeGreaterThan(latest);
      expect(times[0]).toBeGreaterThanOrEqual(now);
      expect(times.every((t, i) => i === 0 || t > times[i - 1])).toBe(true);
      const steps = new Rng(2);
      for (let i = 0; i < 300; i++) world.randomStep(steps);
      expect(world.postCount).toBe(world.listPosts().length);

      expect(() => world.seedExisting({ posts: 1, accounts: 1 })).toThrow(/empty world/);
      expect(() => new PozyWorld().seedExisting({ posts: 5, accounts: 0 })).toThrow(/account/);
    });
  });

  describe('API', () => {
    it('answers 401 without the Bearer key, and every answer has X-Request-Id and the rate-limit headers', async () => {
      const sim = await start();
      const none = await api(sim, '/v1/posts', { key: null });
      const wrong = await api(sim, '/v1/posts', { key: 'sk_other' });
      const ok = await api(sim, '/v1/posts', { headers: { 'x-request-id': 'req-mine-1' } });

      expect([none.status, none.text, wrong.status, wrong.text]).toEqual([401, '{"error":"Unauthorized"}', 401, '{"error":"Unauthorized"}']);
      expect(ok.status).toBe(200);
      expect(ok.headers.get('x-request-id')).toBe('req-mine-1');
      for (const answer of [none, wrong, ok]) {
        expect(answer.headers.get('x-request-id')).toBeTruthy();
        expect(answer.headers.get('x-ratelimit-limit')).toBe('600');
        expect(Number(answer.headers.get('x-ratelimit-remaining'))).toBeGreaterThanOrEqual(599);
        expect(Number(answer.headers.get('x-ratelimit-reset'))).toBeGreaterThanOrEqual(Math.floor(Date.now() / 1000) - 1);
      }
      expect(none.headers.get('x-request-id')).not.toBe(wrong.headers.get('x-request-id'));
    });

    it('GET /v1/posts/:id: the REST shape with populated accounts, 400 for a malformed id, 404 unknown or deleted', async () => {
      const sim = await start();
      const { instagram, linkedin } = workspace(sim.world);
      const created = sim.world.createPost({
        content: 'Spring sale',
        accountIds: [linkedin._id, instagram._id],
        scheduledFor: '2026-03-02T09:00:00Z',
      });
      sim.world.publishPost(created._id, { [instagram._id]: 'failed' });

      const { status, body } = await api<{ post: Post }>(sim, `/v1/posts/${created._id}`);
      expect(status).toBe(200);
      expect(body.post).toEqual({
        _id: created._id,
        userId: sim.world.userId,
        content: 'Spring sale',
        status: 'partial',
        scheduledFor: '2026-03-02T09:00:00.000Z',
        timezone: 'UTC',
        publishedAt: expect.any(String),
        platforms: [
          {
            platform: 'linkedin',
            accountId: { _id: linkedin._id, platform: 'linkedin', username: 'acme-shop', displayName: 'Acme Shop', isActive: true },
            status: 'published',
            platformPostId: expect.any(String),
            platformPostUrl: expect.stringMatching(/^https:\/\//),
            publishedAt: expect.any(String),
          },
          {
            platform: 'instagram',
            accountId: { _id: instagram._id, platform: 'instagram', username: 'acme.shop', displayName: 'Acme Shop', isActive: true },
            status: 'failed',
            errorMessage: expect.any(String),
            errorCategory: expect.any(String),
            errorSource: expect.stringMatching(/^(user|platform|system)$/),
            // Instagram is a Meta platform: its failures carry the Graph API's error.
            platformError: expect.objectContaining({ code: expect.any(Number), message: expect.any(String) }),
          },
        ],
        createdAt: created.createdAt,
        updatedAt: expect.any(String),
      });
      expect(body.post).toEqual(sim.world.getPost(created._id));

      sim.world.removeAccount(instagram._id);
      expect((await api<{ post: Post }>(sim, `/v1/posts/${created._id}`)).body.post.platforms[1].accountId).toBe(instagram._id);

      const malformed = await api(sim, '/v1/posts/not-an-id');
      expect(malformed.status).toBe(400);
      expect(malformed.body).toMatchObject({ error: expect.any(String), param: 'postId' });
      expect(await api(sim, '/v1/posts/66aa01f3c2b1e4d5f6a7b8c9')).toMatchObject({ status: 404, text: '{"error":"Not found"}' });
      sim.world.deletePost(created._id);
      expect(await api(sim, `/v1/posts/${created._id}`)).toMatchObject({ status: 404, text: '{"error":"Not found"}' });
    });

    it('GET /v1/posts pages, filters and sorts; limit > 500 and unknown parameters are 400', async () => {
      const sim = await start();
      const world = sim.world;
      const a = workspace(world);
      const other = world.createProfile('Other');
      const tiktok = world.connectAccount(other._id, 'tiktok', 'other.tt');
      const days = ['2026-03-01', '2026-03-02', '2026-03-03', '2026-03-04', '2026-03-05'];
      const scheduled = days.map((day) =>
        world.createPost({ content: `On ${day}`, accountIds: [a.instagram._id], scheduledFor: `${day}T10:00:00Z` }),
      );
      const onTiktok = world.createPost({ content: 'Dance', accountIds: [tiktok._id], scheduledFor: '2026-04-01T10:00:00Z' });
      world.publishPost(scheduled[0]._id);
      const ids = (posts: Post[]) => posts.map((p) => p._id);
      type List = { posts: Post[]; pagination: { page: number; limit: number; total: number; pages: number } };

      const page2 = await api<List>(sim, '/v1/posts?limit=2&page=2');
      expect(page2.status).toBe(200);
      // Default order: scheduled, newest first.
      expect(ids(page2.body.posts)).toEqual(ids([scheduled[3], scheduled[2]]));
      expect(page2.body.pagination).toEqual({ page: 2, limit: 2, total: 6, pages: 3 });
      expect(ids((await api<List>(sim, '/v1/posts?limit=2&offset=1&page=9')).body.posts)).toEqual(ids([scheduled[4], scheduled[3]]));
      expect((await api<List>(sim, '/v1/posts')).body.pagination).toEqual({ page: 1, limit: 10, total: 6, pages: 1 });
      expect(ids((await api<List>(sim, '/v1/posts?sortBy=scheduled-asc&limit=2')).body.posts)).toEqual(ids(scheduled.slice(0, 2)));

      expect(ids((await api<List>(sim, '/v1/posts?status=published')).body.posts)).toEqual([scheduled[0]._id]);
      expect(ids((await api<List>(sim, '/v1/posts?platform=tiktok')).body.posts)).toEqual([onTiktok._id]);
      expect(ids((await api<List>(sim, `/v1/posts?profileId=${other._id}`)).body.posts)).toEqual([onTiktok._id]);
      expect((await api<List>(sim, `/v1/posts?profileId=all`)).body.pagination.total).toBe(6);
      expect(ids((await api<List>(sim, `/v1/posts?accountId=${tiktok._id}`)).body.posts)).toEqual([onTiktok._id]);
      expect(ids((await api<List>(sim, '/v1/posts?fromDate=2026-03-02&toDate=2026-03-03&sortBy=scheduled-asc')).body.posts)).toEqual(
        ids(scheduled.slice(1, 3)),
      );
      expect(ids((await api<List>(sim, '/v1/posts?fromDate=2026-03-04T10:00:00Z&toDate=2026-03-31')).body.posts)).toEqual(
        ids([scheduled[4], scheduled[3]]),
      );
      expect(ids((await api<List>(sim, '/v1/posts?search=dance')).body.posts)).toEqual([onTiktok._id]);

      const tooMany = await api(sim, '/v1/posts?limit=501');
      expect(tooMany.status).toBe(400);
      expect(tooMany.body).toMatchObject({ param: 'limit' });
      expect((await api(sim, '/v1/posts?limit=500')).status).toBe(200);
      for (const bad of ['limit=0', 'page=0', 'status=done', 'profileId=xyz', 'fromDate=March', 'sortBy=random', 'limit=2&limit=3']) {
        expect([bad, (await api(sim, `/v1/posts?${bad}`)).status]).toEqual([bad, 400]);
      }
      const unknown = await api<{ error: string }>(sim, '/v1/posts?colour=red');
      expect(unknown.status).toBe(400);
      expect(unknown.body.error).toMatch(/colour/);
      expect(unknown.body.error).toMatch(/Accepted: .*page.*limit.*offset.*status.*platform.*profileId.*accountId.*fromDate.*toDate.*sortBy/);
    });

    it('GET /v1/accounts by profile: populated profile, connection state, pagination only with page and limit', async () => {
      const sim = await start();
      const a = workspace(sim.world);
      const b = sim.world.createProfile('Beta');
      const beta = sim.world.connectAccount(b._id, 'twitter', 'beta_x');
      sim.world.disconnectAccount(a.instagram._id);
      const gone = sim.world.connectAccount(a.profile._id, 'facebook', 'acme.fb');
      sim.world.removeAccount(gone._id);
      type List = { accounts: Account[]; hasAnalyticsAccess: boolean; pagination?: unknown };

      const listed = await api<List>(sim, `/v1/accounts?profileId=${a.profile._id}`);
      expect(listed.status).toBe(200);
      expect(listed.body).toEqual({
        accounts: [
          {
            _id: a.instagram._id,
            platform: 'instagram',
            profileId: { _id: a.profile._id, name: 'Acme Shop', slug: 'acme-shop' },
            username: 'acme.shop',
            displayName: 'Acme Shop',
            profilePicture: `https://cdn.pozy.ai/avatars/${a.instagram._id}.jpg`,
            profileUrl: 'https://www.instagram.com/acme.shop/',
            isActive: false,
            needsReconnection: true,
            enabled: true,
          },
          expect.objectContaining({ _id: a.linkedin._id, isActive: true, needsReconnection: false }),
        ],
        hasAnalyticsAccess: false,
      });
      expect((await api<List>(sim, `/v1/accounts?profileId=${b._id}`)).body.accounts.map((x) => x._id)).toEqual([beta._id]);
      expect((await api<List>(sim, '/v1/accounts?profileId=66a9ffee00112233445566aa')).body).toEqual({ accounts: [], hasAnalyticsAccess: false });
      expect((await api(sim, '/v1/accounts?profileId=nope')).status).toBe(400);
      expect((await api(sim, `/v1/accounts?profileId=${a.profile._id}&page=1`)).status).toBe(400);
      expect((await api(sim, `/v1/accounts?profileId=${a.profile._id}&limit=1`)).status).toBe(400);
      const paged = await api<List>(sim, `/v1/accounts?profileId=${a.profile._id}&page=2&limit=1`);
      expect(paged.body).toEqual({
        accounts: [expect.objectContaining({ _id: a.linkedin._id })],
        hasAnalyticsAccess: false,
        pagination: { page: 2, limit: 1, total: 2, pages: 2 },
      });
      expect((await api<List>(sim, `/v1/accounts?profileId=${a.profile._id}&status=connected`)).body.accounts.map((x) => x._id)).toEqual([
        a.linkedin._id,
      ]);
    });

    it('rate-limits per sliding minute: 429 with Retry-After and details once the window is full', async () => {
      const sim = await start({ rateLimitPerMinute: 3 });
      const answers = [];
      for (let i = 0; i < 4; i++) answers.push(await api(sim, '/v1/posts'));

      expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 429]);
      expect(answers.map((a) => a.headers.get('x-ratelimit-remaining'))).toEqual(['2', '1', '0', '0']);
      const limited = answers[3];
      const retryAfter = Number(limited.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThanOrEqual(59);
      expect(retryAfter).toBeLessThanOrEqual(60);
      expect(limited.body).toMatchObject({ error: expect.stringMatching(/rate limit/i), details: expect.objectContaining({ limit: 3 }) });
      expect(Number(limited.headers.get('x-ratelimit-reset'))).toBeGreaterThan(Date.now() / 1000 + 58);
    });

    it('injects each API fault at rate 1, and stops injecting when switched off', async () => {
      const sim = await start();
      const { instagram } = workspace(sim.world);
      const post = sim.world.createPost({ content: 'x', accountIds: [instagram._id] });
      const path = `/v1/posts/${post._id}`;

      sim.setFaults({ api5xxRate: 1 });
      const failed = await api(sim, path);
      expect([failed.status, failed.body.error]).toEqual([500, expect.any(String)]);

      sim.setFaults({ api5xxRate: 0, api429Rate: 1 });
      const throttled = await api(sim, path);
      expect([throttled.status, throttled.headers.get('retry-after')]).toEqual([429, '1']);
      expect(throttled.body).toMatchObject({ error: expect.any(String), details: expect.any(Object) });

      sim.setFaults({ api429Rate: 0, apiSlowRate: 1, apiSlowMs: 400 });
      let started = Date.now();
      expect((await api(sim, path)).status).toBe(200);
      expect(Date.now() - started).toBeGreaterThanOrEqual(390);

      sim.setFaults({ apiSlowRate: 0, apiLatencyMs: 250 });
      started = Date.now();
      expect((await api(sim, path)).status).toBe(200);
      expect(Date.now() - started).toBeGreaterThanOrEqual(240);

      sim.setFaults({ apiLatencyMs: 0, apiResetRate: 1 });
      const reset = await api(sim, path).then(
        () => 'answered',
        (error: Error & { cause?: { code?: string } }) => error.cause?.code,
      );
      expect(['ECONNRESET', 'UND_ERR_SOCKET']).toContain(reset);

      sim.setFaults({ apiResetRate: 0, apiTimeoutRate: 1 });
      started = Date.now();
      const hung = await api(sim, path, { signal: AbortSignal.timeout(300) }).then(
        () => 'answered',
        (error: Error) => error.name,
      );
      expect(hung).toBe('TimeoutError');
      expect(Date.now() - started).toBeGreaterThanOrEqual(290);

      sim.setFaults({ apiTimeoutRate: 0 });
      expect((await api(sim, path)).status).toBe(200);
      expect(sim.stats().api.byRoute['GET /v1/posts/:postId']).toEqual({ '200': 3, '500': 1, '429': 1, reset: 1, timeout: 1 });
    });

    it("sends an injected 429's Retry-After and X-RateLimit-Reset as a test writes them, readable or not", async () => {
      const sim = await start({ faults: { api429Rate: 1, api429RetryAfter: '1e300', api429RateLimitReset: '99999999999999' } });

      const odd = await api(sim, '/v1/posts');
      expect([odd.status, odd.headers.get('retry-after'), odd.headers.get('x-ratelimit-reset')]).toEqual([429, '1e300', '99999999999999']);

      sim.setFaults({ api429RetryAfter: '', api429RateLimitReset: '' });
      const plain = await api(sim, '/v1/posts');
      expect([plain.status, plain.headers.get('retry-after')]).toEqual([429, null]);
      // The window's own reset, in Unix seconds.
      expect(Math.abs(Number(plain.headers.get('x-ratelimit-reset')) - Date.now() / 1000)).toBeLessThan(120);

      expect(() => sim.setFaults({ api429RetryAfter: 'a\r\nSet-Cookie: x' })).toThrow(/header value/);
    });

    it('stops promptly while a timeout fault holds a request open', async () => {
      const sim = await start({ faults: { apiTimeoutRate: 1 } });
      const pending = api(sim, '/v1/posts').then(
        () => 'answered',
        () => 'closed',
      );
      await waitFor('the request to be held', async () => (sim.stats().api.byRoute['GET /v1/posts']?.timeout ? true : undefined));
      const started = Date.now();
      await sim.stop();
      // Not held for the fault's timeout; the bound leaves room for a busy machine.
      expect(Date.now() - started).toBeLessThan(5000);
      expect(await pending).toBe('closed');
    });

    it('shares the rate limit with another client of the key: its usage shows, together they meet 429, and a short window frees slots', async () => {
      type Limited = { details?: { limit: number; windowSeconds: number } };
      const sim = await start({ rateLimitPerMinute: 30, rateLimitWindowMs: 3_000 });
      const started = Date.now();
      const first = await api(sim, '/v1/posts');
      expect(first.headers.get('x-ratelimit-remaining')).toBe('29');
      expect(Number(first.headers.get('x-ratelimit-reset'))).toBeLessThanOrEqual(Math.ceil((Date.now() + 3_000) / 1000));

      // 20 of the 30 slots of each window, one every 150 ms; once it has run a whole window, the first request is out of it.
      sim.setOtherClientPerMinute(20);
      await waitFor('the other client to run a whole window', async () => (sim.stats().api.otherClient.accepted > 20 ? true : undefined));
      const shared = await api(sim, '/v1/posts');
      expect(shared.status).toBe(200);
      const remaining = Number(shared.headers.get('x-ratelimit-remaining'));
      expect(remaining).toBeGreaterThanOrEqual(30 - 1 - 22);
      expect(remaining).toBeLessThanOrEqual(30 - 1 - 18);

      const burst: Answer<Limited>[] = [];
      for (let i = 0; i < 20; i++) burst.push(await api<Limited>(sim, '/v1/posts'));
      const limited = burst.filter((a) => a.status === 429);
      expect(Math.abs(burst.length - limited.length - remaining)).toBeLessThanOrEqual(2);
      for (const answer of limited) {
        expect(answer.headers.get('x-ratelimit-remaining')).toBe('0');
        expect(Number(answer.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
        expect(Number(answer.headers.get('retry-after'))).toBeLessThanOrEqual(3);
        expect(answer.body.details).toMatchObject({ limit: 30, windowSeconds: 3 });
      }
      const lastLimited = Date.now();
      // Only pozy-sync's requests are HTTP requests; the other client's are slots taken.
      const stats = sim.stats().api;
      expect(stats.rateLimited).toBe(limited.length);
      expect(stats.requests).toBe(22);
      expect(stats.byRoute['GET /v1/posts']).toEqual({ '200': 22 - limited.length, '429': limited.length });

      // When pozy-sync's accepted requests arrived: the most in any window is what the other client left it
      // (at least 17 slots were the other client's; alone, all 22 would have been accepted).
      const times = sim.acceptedAt();
      expect(times).toHaveLength(22 - limited.length);
      expect(times.every((t, i) => t >= started && t <= lastLimited && (i === 0 || t >= times[i - 1]))).toBe(true);
      const most = Math.max(...times.map((t) => times.filter((u) => u > t - 3_000 && u <= t).length));
      expect(sim.mostAcceptedInWindow()).toBe(most);
      expect(most).toBeLessThanOrEqual(30 - 17);

      // Without the other client, every slot is free again within the 3 s window.
      sim.setOtherClientPerMinute(0);
      const freedAt = await waitFor(
        'the window to empty',
        async () => {
          const probe = await api(sim, '/v1/posts');
          return probe.status === 200 && Number(probe.headers.get('x-ratelimit-remaining')) >= 20 ? Date.now() : undefined;
        },
        10_000,
        500,
      );
      expect(freedAt - lastLimited).toBeLessThan(3_000 + 1_500);

      // More than the limit: the other client's extra requests are refused (it never waits), and pozy-sync meets 429.
      sim.setOtherClientPerMinute(45);
      await waitFor('the other client to be refused', async () => (sim.stats().api.otherClient.refused > 0 ? true : undefined));
      await waitFor('pozy-sync to meet 429', async () => ((await api(sim, '/v1/posts')).status === 429 ? true : undefined));
      expect(sim.stats().api.otherClient).toMatchObject({ perWindow: 45 });
    });

    it('offset paging as Pozy pages: a post deleted before the cursor shifts the next page, a created one lands where its order puts it', async () => {
      const sim = await start();
      const { instagram } = workspace(sim.world);
      const made = Array.from({ length: 25 }, (_, i) => sim.world.createPost({ content: `Post ${i}`, accountIds: [instagram._id] })._id);
      type List = { posts: Post[]; pagination: { total: number; pages: number } };
      const page = async (n: number, sortBy = 'created-asc') => (await api<List>(sim, `/v1/posts?page=${n}&limit=10&sortBy=${sortBy}`)).body;
      const ids = (list: List) => list.posts.map((p) => p._id);

      const first = await page(1);
      expect(ids(first)).toEqual(made.slice(0, 10));
      sim.world.deletePost(made[3]);
      // Every later post moved a place left: post 10 is now on page 1, which this client has read.
      const second = await page(2);
      expect(ids(second)).toEqual(made.slice(11, 21));
      expect(second.pagination).toMatchObject({ total: 24, pages: 3 });
      // Deleted after the cursor: nothing skipped. Created, oldest first: at the end.
      sim.world.deletePost(made[22]);
      const late = sim.world.createPost({ content: 'Late', accountIds: [instagram._id] })._id;
      const third = await page(3);
      expect(ids(third)).toEqual([made[21], made[23], made[24], late]);
      const seen = new Set([...ids(first), ...ids(second), ...ids(third)]);
      expect(
        sim.world
          .listPosts()
          .filter((p) => !seen.has(p._id))
          .map((p) => p._id),
      ).toEqual([made[10]]);

      // Newest first, a post created meanwhile lands before the cursor: the next page repeats the last one read.
      const newest = await page(1, 'created-desc');
      expect(ids(newest)[0]).toBe(late);
      sim.world.createPost({ content: 'Later', accountIds: [instagram._id] });
      expect(ids(await page(2, 'created-desc'))[0]).toBe(ids(newest)[9]);
    });
  });

  describe('whole posts and accounts', () => {
    type PostList = { posts: Post[]; pagination: { total: number; pages: number } };
    type AccountList = { accounts: Account[] };
    const accountIdOf = (target: PlatformTarget) => (typeof target.accountId === 'string' ? target.accountId : target.accountId._id);

    it('a post created with every detail reads back from GET /v1/posts/{id} with all of them; the caller keeps no handle on them', async () => {
      const sim = await start();
      const { profile, instagram, linkedin } = workspace(sim.world);
      const original = sim.world.createPost({ content: 'The first spring post', accountIds: [instagram._id] });
      const details: PostDetails = {
        title: 'Spring sale: 20% off',
        mediaItems: [
          { type: 'image', url: 'https://cdn.example/a.jpg', altText: 'A red bicycle' },
          { type: 'video', url: 'https://cdn.example/b.mp4', thumbnail: 'https://cdn.example/b.jpg' },
          { type: 'gif', url: 'https://cdn.example/c.gif' },
          { type: 'document', url: 'https://cdn.example/d.pdf' },
        ],
        tags: ['promo', 'seasonal'],
        hashtags: ['spring', 'sale'],
        mentions: ['janedoe'],
        visibility: 'unlisted',
        metadata: { crmId: 'A-1042', campaign: 'spring', nested: { list: [1, 'two', { three: true }] } },
        timezone: 'Europe/Berlin',
        recycling: { enabled: true, intervalDays: 30 },
        recycledFromPostId: original._id,
        queuedFromProfile: profile._id,
        queueId: '66b0c0ffee00112233445566',
      };
      const input = structuredClone(details);
      const created = sim.world.createPost({
        content: 'Frühlingsangebot: 20 % auf alles',
        accountIds: [instagram._id, linkedin._id],
        scheduledFor: '2026-04-01T08:00:00Z',
        ...input,
      });
      // Changing what was passed in (or what came back) changes nothing in the world.
      input.metadata!.crmId = 'changed';
      input.mediaItems![0].url = 'https://changed.example/';
      input.tags!.push('changed');
      created.metadata!.campaign = 'changed';

      const { status, body } = await api<{ post: Post }>(sim, `/v1/posts/${created._id}`);
      expect(status).toBe(200);
      expect(body.post).toEqual({
        _id: created._id,
        userId: sim.world.userId,
        content: 'Frühlingsangebot: 20 % auf alles',
        status: 'scheduled',
        scheduledFor: '2026-04-01T08:00:00.000Z',
        platforms: [
          expect.objectContaining({ platform: 'instagram', status: 'pending' }),
          expect.objectContaining({ platform: 'linkedin', status: 'pending' }),
        ],
        createdAt: created.createdAt,
        updatedAt: created.updatedAt,
        ...details,
      });
      expect(body.post).toEqual(sim.world.getPost(created._id));
      // The list serves the same post.
      const listed = await api<PostList>(sim, '/v1/posts?sortBy=created-desc&limit=1');
      expect(listed.body.posts).toEqual([body.post]);

      // Without details: nothing extra, timezone UTC.
      const plain = (await api<{ post: Post }>(sim, `/v1/posts/${original._id}`)).body.post;
      expect(Object.keys(plain).sort()).toEqual(['_id', 'content', 'createdAt', 'platforms', 'status', 'timezone', 'updatedAt', 'userId']);
      expect(plain.timezone).toBe('UTC');

      const bad: [Partial<PostDetails>, RegExp][] = [
        [{ mediaItems: [{ type: 'audio' as 'image', url: 'https://x' }] }, /mediaItems/],
        [{ timezone: 'Mars/Olympus' }, /timezone/],
        [{ visibility: 'friends' as 'public' }, /visibility/],
        [{ tags: [1 as unknown as string] }, /tags/],
        [{ metadata: [] as unknown as Record<string, unknown> }, /metadata/],
        [{ recycling: { intervalDays: 30 } as unknown as Recycling }, /recycling/],
      ];
      for (const [wrong, message] of bad) {
        expect(() => sim.world.createPost({ content: 'x', accountIds: [linkedin._id], ...wrong })).toThrow(message);
        expect(() => sim.world.editPost(created._id, wrong)).toThrow(message);
      }
      expect(sim.world.getPost(created._id)).toEqual(body.post);
    });

    it('editPost, editTarget and updateAccount change only what they name, bump updatedAt, and send no event', async () => {
      const sim = await start();
      const world = sim.world;
      const { profile, instagram, linkedin } = workspace(world);
      const post = world.createPost({
        content: 'v1',
        accountIds: [instagram._id, linkedin._id],
        scheduledFor: Date.now() + 3_600_000,
        title: 'Old title',
        tags: ['promo'],
        metadata: { crmId: 'A-1' },
      });
      world.publishPost(post._id, { [instagram._id]: 'failed', [linkedin._id]: 'failed' });
      const events: PozyEvent[] = [];
      world.onEvent((e) => events.push(e));
      const read = async () => (await api<{ post: Post }>(sim, `/v1/posts/${post._id}`)).body.post;

      const before = await read();
      world.editPost(post._id, { title: 'New title', hashtags: ['fresh'] });
      const edited = await read();
      expect(edited).toEqual({ ...before, title: 'New title', hashtags: ['fresh'], updatedAt: expect.any(String) });
      expect(Date.parse(edited.updatedAt)).toBeGreaterThan(Date.parse(before.updatedAt));
      // The old callers' edit: content only, the details stay.
      world.editPost(post._id, { content: 'v2' });
      const contentEdited = await read();
      expect(contentEdited).toEqual({ ...edited, content: 'v2', updatedAt: expect.any(String) });
      expect(Date.parse(contentEdited.updatedAt)).toBeGreaterThan(Date.parse(edited.updatedAt));

      world.editTarget(post._id, instagram._id, {
        errorMessage: 'The media could not be processed',
        errorCategory: 'platform_rejected',
        errorSource: 'platform',
        platformError: { code: 36003, subcode: 2207009, message: 'The aspect ratio is not supported.' },
        customContent: 'Instagram only: link in bio',
        customMedia: [{ type: 'image', url: 'https://cdn.example/square.jpg' }],
      });
      const targetEdited = await read();
      expect(targetEdited).toEqual({
        ...contentEdited,
        platforms: [
          {
            ...contentEdited.platforms[0],
            errorMessage: 'The media could not be processed',
            errorCategory: 'platform_rejected',
            errorSource: 'platform',
            platformError: { code: 36003, subcode: 2207009, message: 'The aspect ratio is not supported.' },
            customContent: 'Instagram only: link in bio',
            customMedia: [{ type: 'image', url: 'https://cdn.example/square.jpg' }],
          },
          contentEdited.platforms[1],
        ],
        updatedAt: expect.any(String),
      });
      expect(Date.parse(targetEdited.updatedAt)).toBeGreaterThan(Date.parse(contentEdited.updatedAt));
      world.editTarget(post._id, linkedin._id, { customContent: 'For LinkedIn' });
      const oneField = await read();
      expect(oneField.platforms).toEqual([targetEdited.platforms[0], { ...targetEdited.platforms[1], customContent: 'For LinkedIn' }]);
      expect(() => world.editTarget(post._id, linkedin._id, { platformError: { message: 'x' } })).toThrow(/Meta platforms only/);
      expect(() => world.editTarget(post._id, instagram._id, { errorCategory: 'nope' as 'unknown' })).toThrow(/errorCategory/);
      expect(() => world.editTarget(post._id, '66aa01f3c2b1e4d5f6a7b8c9', { customContent: 'x' })).toThrow(/no target/);
      expect(await read()).toEqual(oneField);

      const version = world.accountVersion(linkedin._id)!;
      const account = world.updateAccount(linkedin._id, {
        displayName: 'Acme (LinkedIn)',
        profilePicture: null,
        enabled: false,
        metadata: { organizationUrn: 'urn:li:organization:42' },
        followersCount: 1234,
      });
      expect(world.accountVersion(linkedin._id)).toBeGreaterThan(version);
      const { accounts } = (await api<AccountList>(sim, `/v1/accounts?profileId=${profile._id}`)).body;
      expect(accounts[1]).toEqual({
        _id: linkedin._id,
        platform: 'linkedin',
        profileId: { _id: profile._id, name: 'Acme Shop', slug: 'acme-shop' },
        username: 'acme-shop',
        displayName: 'Acme (LinkedIn)',
        profilePicture: null,
        profileUrl: 'https://www.linkedin.com/company/acme-shop',
        isActive: true,
        needsReconnection: false,
        enabled: false,
        metadata: { organizationUrn: 'urn:li:organization:42' },
        followersCount: 1234,
        followersLastUpdated: new Date(world.accountVersion(linkedin._id)!).toISOString(),
      });
      expect(accounts[1]).toEqual(account);
      expect(accounts[0]).toEqual(world.getAccount(instagram._id));
      // Only the name changes what posts show of the account.
      expect((await read()).platforms[1].accountId).toMatchObject({ displayName: 'Acme (LinkedIn)' });
      world.updateAccount(linkedin._id, { followersCount: 1300 });
      const later = world.getAccount(linkedin._id)!;
      expect(later).toMatchObject({ displayName: 'Acme (LinkedIn)', profilePicture: null, enabled: false, followersCount: 1300 });
      expect(Date.parse(later.followersLastUpdated!)).toBeGreaterThan(Date.parse(account.followersLastUpdated!));
      expect(() => world.updateAccount(linkedin._id, { followersCount: -1 })).toThrow(/followersCount/);

      expect(events).toEqual([]);
    });

    it('the unknown-field switch adds fields pozy-sync has never seen to posts, targets and accounts, single and listed', async () => {
      const sim = await start();
      const { profile, instagram, linkedin } = workspace(sim.world);
      const ids = [0, 1, 2].map(
        (i) => sim.world.createPost({ content: `post ${i}`, accountIds: [instagram._id, linkedin._id], scheduledFor: Date.now() + 60_000 })._id,
      );
      const readAll = async () => ({
        single: await Promise.all(ids.map(async (id) => (await api<{ post: Post }>(sim, `/v1/posts/${id}`)).body.post)),
        listed: (await api<PostList>(sim, '/v1/posts?sortBy=created-asc')).body.posts,
        accounts: (await api<AccountList>(sim, `/v1/accounts?profileId=${profile._id}`)).body.accounts,
      });
      const off = await readAll();
      for (const post of [...off.single, ...off.listed]) {
        expect(post).not.toHaveProperty(UNKNOWN_POST_FIELD);
        for (const target of post.platforms) expect(target).not.toHaveProperty(UNKNOWN_TARGET_FIELD);
      }
      for (const account of off.accounts) expect(account).not.toHaveProperty(UNKNOWN_ACCOUNT_FIELD);

      sim.world.setUnknownFields(true);
      const on = await readAll();
      expect(on.listed).toEqual(on.single);
      for (const [i, post] of on.single.entries()) {
        const score = post[UNKNOWN_POST_FIELD]!.score;
        expect(post[UNKNOWN_POST_FIELD]).toEqual({ score, model: 'v2' });
        expect(Number.isInteger(score) && score >= 0 && score <= 100).toBe(true);
        const reaches = post.platforms.map((t) => t[UNKNOWN_TARGET_FIELD]!);
        for (const reach of reaches) expect(Number.isInteger(reach) && reach >= 0).toBe(true);
        // The same post read without the switch, plus the unknown fields: nothing else changes, nor does updatedAt.
        expect(post).toEqual({
          ...off.single[i],
          [UNKNOWN_POST_FIELD]: { score, model: 'v2' },
          platforms: off.single[i].platforms.map((t, k) => ({ ...t, [UNKNOWN_TARGET_FIELD]: reaches[k] })),
        });
      }
      // Derived from the ids: they differ between posts and targets, and read the same again.
      expect(new Set(on.single.flatMap((p) => p.platforms.map((t) => t[UNKNOWN_TARGET_FIELD]))).size).toBeGreaterThan(1);
      expect((await readAll()).single).toEqual(on.single);
      expect(on.accounts).toEqual(off.accounts.map((a) => ({ ...a, [UNKNOWN_ACCOUNT_FIELD]: true })));
      expect((await api<AccountList>(sim, '/v1/accounts?page=1&limit=10')).body.accounts.every((a) => a[UNKNOWN_ACCOUNT_FIELD] === true)).toBe(true);

      sim.world.setUnknownFields(false);
      expect(await readAll()).toEqual(off);

      // As a world option, from the start.
      const world = new PozyWorld({ seed: 3, unknownFields: true });
      world.seedWorld({ profiles: 1, accountsPerProfile: 2, posts: 3 });
      expect(world.listPosts().every((p) => p[UNKNOWN_POST_FIELD]?.model === 'v2')).toBe(true);
      expect(world.listAccounts().every((a) => a[UNKNOWN_ACCOUNT_FIELD] === true)).toBe(true);
    });

    it('failed targets on Meta platforms carry platformError; others do not', async () => {
      const sim = await start();
      const world = sim.world;
      const profile = world.createProfile('Meta and more');
      const [facebook, instagram, threads, twitter] = (['facebook', 'instagram', 'threads', 'twitter'] as const).map((platform) =>
        world.connectAccount(profile._id, platform, `acme.${platform}`),
      );
      // An Instagram account connected to a profile with a Facebook page sits under it.
      expect(instagram.parentAccountId).toBe(facebook._id);
      expect(twitter.parentAccountId).toBeUndefined();
      const post = world.createPost({ content: 'everywhere', accountIds: [facebook._id, instagram._id, threads._id, twitter._id] });
      world.disconnectAccount(instagram._id);
      world.disconnectAccount(twitter._id);
      const events: PozyEvent[] = [];
      world.onEvent((e) => events.push(e));
      world.publishPost(post._id, { [facebook._id]: 'failed', [threads._id]: 'published' });

      const { body } = await api<{ post: Post }>(sim, `/v1/posts/${post._id}`);
      const [fb, ig, th, tw] = body.post.platforms;
      expect(fb).toMatchObject({ status: 'failed', platformError: { code: expect.any(Number), message: expect.any(String) } });
      // A dead token: auth_expired, with the Graph API's session-expired error.
      expect(ig).toMatchObject({
        status: 'failed',
        errorCategory: 'auth_expired',
        errorSource: 'user',
        platformError: { code: 190, subcode: 463, message: 'Error validating access token: Session has expired' },
      });
      expect(th.status).toBe('published');
      expect(th).not.toHaveProperty('platformError');
      expect(tw).toMatchObject({ status: 'failed', errorCategory: 'auth_expired' });
      expect(tw).not.toHaveProperty('platformError');
      // The webhook blocks stay as they were: the REST post has the Graph API's error, the events do not.
      expect(events.map((e) => e.event)).toContain('post.platform.failed');
      expect(JSON.stringify(events)).not.toContain('platformError');
    });

    it('a seeded workspace reads back with every media type, titles, tags, metadata, queued posts and richer accounts', async () => {
      const sim = await start();
      sim.world.seedExisting({ posts: 3_000, accounts: 43 });
      const posts: Post[] = [];
      for (let page = 1, pages = 1; page <= pages; page++) {
        const { body } = await api<PostList>(sim, `/v1/posts?page=${page}&limit=500&sortBy=created-asc`);
        pages = body.pagination.pages;
        posts.push(...body.posts);
      }
      expect(posts).toHaveLength(3_000);
      expect(hasNull(posts)).toBe(false);
      const share = (test: (post: Post) => boolean) => posts.filter(test).length / posts.length;

      expect(share((p) => p.title !== undefined)).toBeGreaterThan(0.7);
      const media = posts.flatMap((p) => p.mediaItems ?? []);
      expect(new Set(media.map((m) => m.type))).toEqual(new Set(MEDIA_TYPES));
      expect(posts.every((p) => (p.mediaItems?.length ?? 0) <= 3)).toBe(true);
      expect(share((p) => p.mediaItems === undefined)).toBeGreaterThan(0.1);
      for (const item of media) expect(item.url).toMatch(/^https:\/\//);
      expect(media.filter((m) => m.type === 'video').every((m) => m.thumbnail !== undefined)).toBe(true);
      expect(media.some((m) => m.altText !== undefined)).toBe(true);
      expect(new Set(media.map((m) => m.url)).size).toBe(media.length);
      expect(share((p) => (p.tags?.length ?? 0) > 0)).toBeGreaterThan(0.5);
      expect(posts.every((p) => (p.tags?.length ?? 0) <= 3)).toBe(true);
      expect(new Set(posts.flatMap((p) => p.tags ?? [])).size).toBeLessThan(20);
      expect(share((p) => (p.hashtags?.length ?? 0) > 0)).toBeGreaterThan(0.3);
      expect(share((p) => (p.mentions?.length ?? 0) > 0)).toBeGreaterThan(0.05);
      const visibility = new Map<string | undefined, number>();
      for (const post of posts) visibility.set(post.visibility, (visibility.get(post.visibility) ?? 0) + 1);
      expect(visibility.get('public')!).toBeGreaterThan(posts.length * 0.7);
      expect(visibility.get('private')!).toBeGreaterThan(0);
      expect(visibility.get('unlisted')!).toBeGreaterThan(0);
      const withMetadata = posts.filter((p) => p.metadata !== undefined);
      expect(withMetadata.length / posts.length).toBeGreaterThan(0.4);
      expect(withMetadata.length / posts.length).toBeLessThan(0.6);
      for (const post of withMetadata) expect(post.metadata).toEqual({ crmId: expect.stringMatching(/^A-\d+$/), campaign: expect.any(String) });
      expect(new Set(posts.map((p) => p.timezone)).size).toBeGreaterThan(3);

      const queued = posts.filter((p) => p.queuedFromProfile !== undefined);
      expect(queued.length / posts.length).toBeGreaterThan(0.01);
      expect(queued.length / posts.length).toBeLessThan(0.1);
      for (const post of queued) {
        expect(post.queuedFromProfile).toBe(sim.world.profileOfAccount(accountIdOf(post.platforms[0])));
        expect(post.queueId).toMatch(/^[0-9a-f]{24}$/);
      }
      expect(queued.some((p) => p.recycling !== undefined)).toBe(true);
      expect(posts.filter((p) => p.queuedFromProfile === undefined).every((p) => p.queueId === undefined && p.recycling === undefined)).toBe(true);
      const byId = new Map(posts.map((p) => [p._id, p]));
      for (const post of posts.filter((p) => p.recycledFromPostId !== undefined)) {
        expect(byId.get(post.recycledFromPostId!)!.createdAt < post.createdAt).toBe(true);
      }

      // Some content in German, Spanish and Russian.
      const contents = posts.map((p) => p.content);
      expect(contents.some((c) => /[а-яё]/i.test(c))).toBe(true);
      expect(contents.some((c) => /\b(heute|Woche|Angebot|für)\b/.test(c))).toBe(true);
      expect(contents.some((c) => /\b(hoy|semana|oferta|para)\b/.test(c))).toBe(true);

      // Failed targets: platformError on exactly the Meta platforms'.
      const failed = posts.flatMap((p) => p.platforms).filter((t) => t.status === 'failed');
      const meta = failed.filter((t) => (META_PLATFORMS as readonly string[]).includes(t.platform));
      expect(meta.length).toBeGreaterThan(0);
      for (const target of meta) expect(target.platformError).toEqual(expect.objectContaining({ message: expect.any(String) }));
      expect(failed.filter((t) => !meta.includes(t)).every((t) => t.platformError === undefined)).toBe(true);
      expect(new Set(failed.map((t) => t.errorCategory)).size).toBeGreaterThan(4);

      const { accounts } = (await api<AccountList>(sim, '/v1/accounts')).body;
      expect(accounts.every((a) => a.profilePicture === null || a.profilePicture.startsWith('https://'))).toBe(true);
      expect(accounts.some((a) => a.profilePicture === null)).toBe(true);
      expect(accounts.filter((a) => a.followersCount !== undefined).every((a) => a.followersLastUpdated !== undefined)).toBe(true);
      expect(accounts.filter((a) => a.followersCount !== undefined).length).toBeGreaterThan(accounts.length / 2);
      const children = accounts.filter((a) => a.parentAccountId !== undefined);
      expect(children.length).toBeGreaterThan(0);
      for (const child of children) {
        const parent = accounts.find((a) => a._id === child.parentAccountId)!;
        expect([child.platform, parent.platform, parent.profileId._id]).toEqual(['instagram', 'facebook', child.profileId._id]);
      }
      expect(accounts.some((a) => a.metadata !== undefined)).toBe(true);

      // Random activity makes posts like these too.
      const world = new PozyWorld({ seed: 12 });
      world.seedWorld({ profiles: 2, accountsPerProfile: 4, posts: 0 });
      const steps = new Rng(5);
      for (let i = 0; i < 400; i++) world.randomStep(steps);
      const random = world.listPosts();
      expect(random.filter((p) => p.title !== undefined).length).toBeGreaterThan(random.length / 2);
      expect(random.some((p) => (p.mediaItems?.length ?? 0) > 0 && (p.tags?.length ?? 0) > 0 && p.metadata !== undefined)).toBe(true);
      expect(hasNull(random)).toBe(false);
    });
  });

  describe('existing workspaces at scale', () => {
    it('seeds 100,000 posts and 2,000 accounts without events; paging every post, limit=500 created-asc, gives each live post once', async () => {
      const endpoint = await receiver();
      const sim = await start({ webhook: { url: endpoint.url, secret: SECRET } });
      let started = Date.now();
      sim.world.seedExisting({ posts: 100_000, accounts: 2_000 });
      const seedMs = Date.now() - started;

      // Nothing happened while anyone listened: nothing delivered, nothing in the delivery log.
      await sim.idle();
      expect(sim.stats().webhooks).toMatchObject({ eventsEmitted: 0, attempts: 0 });
      expect(endpoint.deliveries).toHaveLength(0);
      expect((await api<{ pagination: { total: number } }>(sim, '/v1/webhooks/logs')).body.pagination.total).toBe(0);
      expect(sim.world.listProfiles()).toHaveLength(250);

      // Changes while a client pages, deletions included.
      sim.setWebhookUrl(undefined);
      const steps = new Rng(4);
      started = Date.now();
      for (let i = 0; i < 2_000; i++) sim.world.randomStep(steps);
      const stepMs = (Date.now() - started) / 2_000;
      expect(sim.world.snapshot().deletedPostIds.length).toBeGreaterThan(0);

      type List = { posts: Post[]; pagination: { page: number; limit: number; total: number; pages: number } };
      const live = sim.world.listPosts().map((p) => p._id);
      const listed: string[] = [];
      let pages = 1;
      started = Date.now();
      for (let page = 1; page <= pages; page++) {
        const { status, body } = await api<List>(sim, `/v1/posts?page=${page}&limit=500&sortBy=created-asc`);
        expect(status).toBe(200);
        expect(body.pagination).toEqual({ page, limit: 500, total: live.length, pages: Math.ceil(live.length / 500) });
        pages = body.pagination.pages;
        for (const post of body.posts) listed.push(post._id);
      }
      const pageMs = (Date.now() - started) / pages;
      expect(listed.length).toBe(live.length);
      expect(listed).toEqual(live);

      const newest = (await api<List>(sim, '/v1/posts?page=2&limit=500&sortBy=created-desc')).body.posts;
      expect(newest.map((p) => p._id)).toEqual(live.slice(-1_000, -500).reverse());
      expect(newest[7]).toEqual(sim.world.getPost(newest[7]._id));

      process.stdout.write(
        `simulator at scale: seeded 100,000 posts and 2,000 accounts in ${seedMs} ms; a random step ${stepMs.toFixed(3)} ms; ` +
          `GET /v1/posts?limit=500&sortBy=created-asc ${pageMs.toFixed(1)} ms a page (${pages} pages, client included)\n`,
      );
    }, 180_000);

    it('GET /v1/accounts paged with limit=100 lists each of 2,000 accounts once', async () => {
      const sim = await start();
      sim.world.seedExisting({ posts: 0, accounts: 2_000 });
      type List = { accounts: Account[]; hasAnalyticsAccess: boolean; pagination?: { page: number; limit: number; total: number; pages: number } };

      const all = (await api<List>(sim, '/v1/accounts')).body;
      expect(all.accounts).toHaveLength(2_000);
      expect(all.pagination).toBeUndefined();
      const listed: Account[] = [];
      for (let page = 1; page <= 20; page++) {
        const { body } = await api<List>(sim, `/v1/accounts?page=${page}&limit=100`);
        expect(body.pagination).toEqual({ page, limit: 100, total: 2_000, pages: 20 });
        listed.push(...body.accounts);
      }
      expect(new Set(listed.map((a) => a._id)).size).toBe(2_000);
      expect(listed).toEqual(all.accounts);
      expect((await api<List>(sim, '/v1/accounts?page=21&limit=100')).body.accounts).toEqual([]);
      expect((await api(sim, '/v1/accounts?page=1&limit=101')).status).toBe(400);

      const profile = sim.world.listProfiles()[17];
      const ofProfile = (await api<List>(sim, `/v1/accounts?profileId=${profile._id}&page=1&limit=100`)).body;
      expect(ofProfile.pagination).toMatchObject({ total: 8 });
      expect(new Set(ofProfile.accounts.map((a) => a.platform)).size).toBe(8);
    });
  });

  describe('webhooks', () => {
    it("delivers a published post's events, signed, with Pozy's exact headers", async () => {
      const endpoint = await receiver();
      const sim = await start({ webhook: { url: endpoint.url, secret: SECRET } });
      const emitted: PozyEvent[] = [];
      sim.world.onEvent((e) => emitted.push(e));
      const { instagram, linkedin } = workspace(sim.world);
      const post = sim.world.createPost({ content: 'Launch', accountIds: [instagram._id, linkedin._id], scheduledFor: '2026-03-02T09:00:00Z' });
      sim.world.publishPost(post._id);
      await sim.idle();

      expect(endpoint.deliveries.map((d) => d.event.id).sort()).toEqual(emitted.map((e) => e.id).sort());
      const postEvents = endpoint.deliveries.filter((d) => d.event.post?.id === post._id).map((d) => d.event.event);
      expect(postEvents.sort()).toEqual(['post.platform.published', 'post.platform.published', 'post.published', 'post.scheduled']);
      for (const delivery of endpoint.deliveries) {
        const expected = emitted.find((e) => e.id === delivery.event.id)!;
        expect(delivery.body.toString('utf8')).toBe(JSON.stringify(expected));
        expect(delivery.headers['x-pozy-signature']).toBe(hmac(delivery.body));
        expect(delivery.headers).toMatchObject({
          'content-type': 'application/json',
          'user-agent': 'Pozy-Webhooks/1.0',
          'x-pozy-event': expected.event,
          'x-pozy-event-id': expected.id,
          'x-pozy-attempt': '1',
          'x-pozy-delivery-id': expect.stringMatching(/^[0-9a-f-]{36}$/),
        });
      }
      expect(new Set(endpoint.deliveries.map((d) => d.headers['x-pozy-delivery-id'])).size).toBe(endpoint.deliveries.length);
      expect(sim.stats().webhooks).toMatchObject({ eventsEmitted: 6, attempts: 6, successes: 6, failures: 0, pending: 0 });
    });

    it('sends no signature without a secret', async () => {
      const endpoint = await receiver();
      const sim = await start({ webhook: { url: endpoint.url } });
      sim.world.createProfile('P');
      workspace(sim.world);
      await sim.idle();
      expect(endpoint.deliveries).toHaveLength(2);
      expect(endpoint.deliveries.every((d) => d.headers['x-pozy-signature'] === undefined)).toBe(true);
    });

    it('retries on the ladder: attempts 1, 2, 3 carry the same event id and bytes and new delivery ids', async () => {
      const endpoint = await receiver();
      endpoint.answer = (index) => (index < 2 ? 500 : 200);
      const sim = await start({ webhook: { url: endpoint.url, secret: SECRET }, timeScale: 1000 });
      const profile = sim.world.createProfile('P');
      const started = Date.now();
      sim.world.connectAccount(profile._id, 'threads', 'p.threads');
      await sim.idle();

      expect(endpoint.deliveries.map((d) => d.headers['x-pozy-attempt'])).toEqual(['1', '2', '3']);
      // 10 s + 100 s at 1000x.
      expect(Date.now() - started).toBeGreaterThanOrEqual(105);
      const [first, ...rest] = endpoint.deliveries;
      for (const retry of rest) {
        expect(retry.headers['x-pozy-event-id']).toBe(first.headers['x-pozy-event-id']);
        expect(retry.body.equals(first.body)).toBe(true);
        expect(retry.headers['x-pozy-signature']).toBe(first.headers['x-pozy-signature']);
      }
      expect(new Set(endpoint.deliveries.map((d) => d.headers['x-pozy-delivery-id'])).size).toBe(3);

      type Logs = { logs: WebhookLogRow[] };
      const { body } = await api<Logs>(sim, `/v1/webhooks/logs?eventId=${first.event.id}`);
      expect(body.logs.map((l) => [l.attemptNumber, l.status, l.statusCode])).toEqual([
        [3, 'success', 200],
        [2, 'failed', 500],
        [1, 'failed', 500],
      ]);
      expect(sim.stats().webhooks).toMatchObject({ attempts: 3, successes: 1, failures: 2, deadLettered: 0 });
    });

    it('dead-letters after the 7th failed attempt and retries no more', async () => {
      const endpoint = await receiver();
      endpoint.answer = () => 503;
      const sim = await start({ webhook: { url: endpoint.url }, timeScale: 1_000_000 });
      sim.world.connectAccount(sim.world.createProfile('P')._id, 'bluesky', 'p.bsky');
      await sim.idle();

      expect(endpoint.deliveries.map((d) => d.headers['x-pozy-attempt'])).toEqual(['1', '2', '3', '4', '5', '6', '7']);
      expect(sim.stats().webhooks).toMatchObject({ attempts: 7, failures: 7, deadLettered: 1, pending: 0 });
    });

    it('counts no answer within 5 s as a failure and retries it', async () => {
      const endpoint = await receiver();
      endpoint.answer = (index) => (index === 0 ? new Promise((resolve) => setTimeout(() => resolve(200), 6_000)) : 200);
      const sim = await start({ webhook: { url: endpoint.url }, timeScale: 1000 });
      sim.world.connectAccount(sim.world.createProfile('P')._id, 'bluesky', 'p.bsky');
      await sim.idle();

      expect(endpoint.deliveries.map((d) => d.headers['x-pozy-attempt'])).toEqual(['1', '2']);
      const { body } = await api<{ logs: WebhookLogRow[] }>(sim, '/v1/webhooks/logs');
      expect(body.logs.map((l) => [l.attemptNumber, l.status, l.statusCode])).toEqual([
        [2, 'success', 200],
        [1, 'failed', 0],
      ]);
      expect(body.logs[1].errorMessage).toMatch(/Timed out after 5000 ms/);
      expect(body.logs[1].responseTime).toBeGreaterThanOrEqual(4_990);
    }, 20_000);

    it('dropRate 1: logged as failed with statusCode 0, never sent, never retried', async () => {
      const endpoint = await receiver();
      const sim = await start({ webhook: { url: endpoint.url }, timeScale: 1_000_000, faults: { dropRate: 1 } });
      sim.world.connectAccount(sim.world.createProfile('P')._id, 'bluesky', 'p.bsky');
      await sim.idle();

      expect(endpoint.deliveries).toHaveLength(0);
      const { body } = await api<{ logs: WebhookLogRow[] }>(sim, '/v1/webhooks/logs');
      expect(body.logs).toHaveLength(1);
      expect(body.logs[0]).toMatchObject({ status: 'failed', statusCode: 0, attemptNumber: 1, errorMessage: expect.stringMatching(/dropped/i) });
      expect(sim.stats().webhooks).toMatchObject({ drops: 1, attempts: 0, deadLettered: 0 });
    });

    it('duplicateRate 1: the first attempt arrives twice, both attempt 1, with different delivery ids', async () => {
      const endpoint = await receiver();
      const sim = await start({ webhook: { url: endpoint.url, secret: SECRET }, faults: { duplicateRate: 1 } });
      sim.world.connectAccount(sim.world.createProfile('P')._id, 'bluesky', 'p.bsky');
      await sim.idle();

      expect(endpoint.deliveries).toHaveLength(2);
      const [a, b] = endpoint.deliveries;
      expect([a.headers['x-pozy-attempt'], b.headers['x-pozy-attempt']]).toEqual(['1', '1']);
      expect(a.body.equals(b.body)).toBe(true);
      expect(a.headers['x-pozy-event-id']).toBe(b.headers['x-pozy-event-id']);
      expect(a.headers['x-pozy-delivery-id']).not.toBe(b.headers['x-pozy-delivery-id']);
      expect((await api<{ logs: WebhookLogRow[] }>(sim, '/v1/webhooks/logs')).body.logs).toHaveLength(2);
      expect(sim.stats().webhooks).toMatchObject({ duplicates: 1, attempts: 2, successes: 2 });
    });

    it('reorderMaxDelayMs lets later events overtake earlier ones', async () => {
      const endpoint = await receiver();
      const sim = await start({ webhook: { url: endpoint.url }, faults: { reorderMaxDelayMs: 300 } });
      const emitted: string[] = [];
      sim.world.onEvent((e) => emitted.push(e.id));
      const profile = sim.world.createProfile('P');
      for (let i = 0; i < 20; i++) sim.world.connectAccount(profile._id, 'bluesky', `p${i}.bsky`);
      await sim.idle();

      const arrived = endpoint.deliveries.map((d) => d.event.id);
      expect([...arrived].sort()).toEqual([...emitted].sort());
      expect(arrived).not.toEqual(emitted);
    });

    it('GET /v1/webhooks/logs: one row per attempt, newest first, with skip, limit and filters', async () => {
      const endpoint = await receiver();
      endpoint.answer = (_index, delivery) => (delivery.event.event === 'account.disconnected' ? 500 : 200);
      const sim = await start({ webhook: { url: endpoint.url, secret: SECRET }, timeScale: 1_000_000 });
      const emitted: PozyEvent[] = [];
      sim.world.onEvent((e) => emitted.push(e));
      const profile = sim.world.createProfile('P');
      for (let i = 0; i < 5; i++) {
        sim.world.connectAccount(profile._id, 'bluesky', `p${i}.bsky`);
        await sim.idle();
      }
      sim.world.disconnectAccount(sim.world.listAccounts()[0]._id);
      await sim.idle();
      type Logs = { logs: WebhookLogRow[]; pagination: { total: number; limit: number; skip: number; pages: number; hasMore: boolean } };

      const all = await api<Logs>(sim, '/v1/webhooks/logs');
      expect(all.body.pagination).toEqual({ total: 12, limit: 50, skip: 0, pages: 1, hasMore: false });
      expect(all.body.logs.slice(7).map((l) => l.eventId)).toEqual(
        emitted
          .slice(0, 5)
          .map((e) => e.id)
          .reverse(),
      );
      const createdAt = all.body.logs.map((l) => Date.parse(l.createdAt));
      expect(createdAt.every((t, i) => i === 0 || t <= createdAt[i - 1])).toBe(true);
      expect(all.body.logs[11]).toEqual({
        _id: expect.stringMatching(/^[0-9a-f]{24}$/),
        userId: sim.world.userId,
        webhookId: sim.webhookId,
        webhookName: expect.any(String),
        eventId: emitted[0].id,
        event: 'account.connected',
        url: endpoint.url,
        status: 'success',
        statusCode: 200,
        requestPayload: emitted[0],
        responseBody: '{"index":0}',
        attemptNumber: 1,
        responseTime: expect.any(Number),
        createdAt: expect.any(String),
      });

      const page = await api<Logs>(sim, '/v1/webhooks/logs?limit=2&skip=9');
      expect(page.body.logs.map((l) => l._id)).toEqual(all.body.logs.slice(9, 11).map((l) => l._id));
      expect(page.body.pagination).toEqual({ total: 12, limit: 2, skip: 9, pages: 6, hasMore: true });
      const failedOnes = await api<Logs>(sim, `/v1/webhooks/logs?status=failed&eventId=${emitted[5].id}`);
      expect(failedOnes.body.logs.map((l) => l.attemptNumber)).toEqual([7, 6, 5, 4, 3, 2, 1]);
      expect((await api<Logs>(sim, '/v1/webhooks/logs?event=account.disconnected&limit=1')).body.pagination.total).toBe(7);
      expect((await api<Logs>(sim, `/v1/webhooks/logs?webhookId=${sim.webhookId}`)).body.pagination.total).toBe(12);
      expect((await api<Logs>(sim, '/v1/webhooks/logs?webhookId=66aa01f3c2b1e4d5f6a7b8c9')).body.pagination.total).toBe(0);
      for (const bad of ['limit=0', 'limit=101', 'skip=10001', 'skip=-1', 'status=ok', 'from=2026-01-01', 'eventId=']) {
        expect([bad, (await api(sim, `/v1/webhooks/logs?${bad}`)).status]).toEqual([bad, 400]);
      }
    });

    it('redeliver resends the stored bytes to the current URL, logged as a new row; 400, 404, 422 and 502 as documented', async () => {
      const first = await receiver();
      const sim = await start({ webhook: { url: first.url, secret: SECRET } });
      const profile = sim.world.createProfile('P');
      const account = sim.world.connectAccount(profile._id, 'bluesky', 'p.bsky');
      await sim.idle();
      sim.world.editPost(sim.world.createPost({ content: 'x', accountIds: [account._id] })._id, { content: 'y' });
      const [original] = first.deliveries;
      const second = await receiver();
      sim.setWebhookUrl(second.url);
      const body = { webhookId: sim.webhookId, eventId: original.event.id };

      const ok = await api(sim, '/v1/webhooks/logs/redeliver', { method: 'POST', body: JSON.stringify(body) });
      expect([ok.status, ok.body]).toEqual([200, { success: true, message: 'Webhook re-delivered' }]);
      expect(second.deliveries).toHaveLength(1);
      const again = second.deliveries[0];
      expect(again.body.equals(original.body)).toBe(true);
      expect(again.headers['x-pozy-signature']).toBe(original.headers['x-pozy-signature']);
      expect(again.headers['x-pozy-event-id']).toBe(original.event.id);
      expect(again.headers['x-pozy-delivery-id']).not.toBe(original.headers['x-pozy-delivery-id']);
      const rows = (await api<{ logs: WebhookLogRow[] }>(sim, `/v1/webhooks/logs?eventId=${original.event.id}`)).body.logs;
      expect(rows.map((r) => r.url)).toEqual([second.url, first.url]);

      second.answer = () => 500;
      const failed = await api(sim, '/v1/webhooks/logs/redeliver', { method: 'POST', body: JSON.stringify(body) });
      expect([failed.status, failed.body]).toEqual([502, { success: false, message: expect.stringMatching(/500/) }]);
      expect((await api<{ logs: WebhookLogRow[] }>(sim, `/v1/webhooks/logs?eventId=${original.event.id}`)).body.logs).toHaveLength(3);

      const post = (b: unknown) => api(sim, '/v1/webhooks/logs/redeliver', { method: 'POST', body: JSON.stringify(b) });
      expect((await post({ webhookId: sim.webhookId })).status).toBe(400);
      expect((await post({ webhookId: '', eventId: original.event.id })).status).toBe(400);
      expect((await post({ webhookId: '66aa01f3c2b1e4d5f6a7b8c9', eventId: original.event.id })).status).toBe(404);
      expect((await post({ webhookId: sim.webhookId, eventId: 'never-sent' })).status).toBe(422);
      expect(second.deliveries).toHaveLength(2);
    });

    it('POST /v1/webhooks/test sends one webhook.test with test: true and a fresh id, without retries', async () => {
      const endpoint = await receiver();
      const sim = await start({ webhook: { url: endpoint.url, secret: SECRET }, timeScale: 1_000_000 });
      const send = (b: unknown) => api(sim, '/v1/webhooks/test', { method: 'POST', body: JSON.stringify(b) });

      const ok = await send({ webhookId: sim.webhookId });
      expect([ok.status, ok.body]).toEqual([200, { success: true, message: 'Test webhook sent successfully' }]);
      expect(endpoint.deliveries).toHaveLength(1);
      const [test] = endpoint.deliveries;
      expect(test.event).toEqual({
        id: expect.any(String),
        event: 'webhook.test',
        message: expect.any(String),
        timestamp: expect.any(String),
        test: true,
      });
      expect(test.headers).toMatchObject({
        'x-pozy-event': 'webhook.test',
        'x-pozy-event-id': test.event.id,
        'x-pozy-attempt': '1',
        'x-pozy-signature': hmac(test.body),
      });

      await send({ webhookId: sim.webhookId });
      expect(endpoint.deliveries[1].event.id).not.toBe(test.event.id);

      endpoint.answer = () => 500;
      const failed = await send({ webhookId: sim.webhookId });
      expect([failed.status, failed.body]).toEqual([500, { success: false, message: 'Test webhook failed' }]);
      await sim.idle();
      expect(endpoint.deliveries).toHaveLength(3);
      expect((await send({})).status).toBe(400);
      expect((await send({ webhookId: '66aa01f3c2b1e4d5f6a7b8c9' })).status).toBe(404);
    });

    it('stop() cancels an attempt in flight and a scheduled retry at once, and idle() then resolves', async () => {
      const endpoint = await receiver();
      // The first event's endpoint never answers; the second's fails, so its retry waits 10 real seconds.
      endpoint.answer = (index) => (index === 0 ? new Promise<number>(() => undefined) : 500);
      const sim = await start({ webhook: { url: endpoint.url } });
      const profile = sim.world.createProfile('P');
      sim.world.connectAccount(profile._id, 'bluesky', 'a.bsky');
      await waitFor('the first delivery to arrive', async () => (endpoint.deliveries.length === 1 ? true : undefined));
      sim.world.connectAccount(profile._id, 'bluesky', 'b.bsky');
      await waitFor('the second delivery to fail', async () => (sim.stats().webhooks.failures === 1 ? true : undefined));
      expect(sim.stats().webhooks.pending).toBe(2);

      const started = Date.now();
      await sim.stop();
      await sim.idle();
      // Well before the retry's 10 s, with room for a busy machine.
      expect(Date.now() - started).toBeLessThan(5000);
      // The attempt cut short by stop() is neither logged nor counted.
      expect(sim.stats().webhooks).toMatchObject({ pending: 0, attempts: 1, failures: 1, deadLettered: 0 });
      expect(endpoint.deliveries).toHaveLength(2);
    });

    it('sends nothing and logs nothing while no webhook URL is set', async () => {
      const sim = await start();
      sim.world.connectAccount(sim.world.createProfile('P')._id, 'bluesky', 'p.bsky');
      await sim.idle();
      expect((await api<{ logs: unknown[] }>(sim, '/v1/webhooks/logs')).body.logs).toEqual([]);
      expect(sim.stats().webhooks).toMatchObject({ eventsEmitted: 1, eventsSkipped: 1, attempts: 0 });
      expect((await api(sim, '/v1/webhooks/test', { method: 'POST', body: JSON.stringify({ webhookId: sim.webhookId }) })).status).toBe(400);
    });
  });
});
