import { createHmac } from 'node:crypto';
import { createServer, IncomingHttpHeaders, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PozySimulator, SimulatorOptions } from '../simulator/simulator';
import type { SubscriptionView, WebhookLogRow } from '../simulator/webhook-sender';
import type { Post, PozyEvent } from '../simulator/world/pozy-shapes';

const KEY_A = 'sk_test_workspace_a';
const KEY_B = 'sk_test_workspace_b';

interface Delivery {
  path: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
  event: PozyEvent;
}

/** One webhook endpoint on loopback for every test subscription, told apart by path; `answer` picks each reply. */
class Receiver {
  readonly deliveries: Delivery[] = [];
  answer: (delivery: Delivery) => number = () => 200;
  private constructor(
    private readonly server: Server,
    readonly base: string,
  ) {}

  static async start(): Promise<Receiver> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const receiver = new Receiver(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    server.on('request', (request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const body = Buffer.concat(chunks);
        const delivery = { path: request.url ?? '', headers: request.headers, body, event: JSON.parse(body.toString('utf8')) as PozyEvent };
        receiver.deliveries.push(delivery);
        response.writeHead(receiver.answer(delivery)).end();
      });
    });
    return receiver;
  }

  url(path: string): string {
    return `${this.base}${path}`;
  }

  at(path: string): Delivery[] {
    return this.deliveries.filter((d) => d.path === path);
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
}

async function api<T = Record<string, unknown>>(
  sim: PozySimulator,
  key: string,
  path: string,
  init: { method?: string; body?: unknown } = {},
): Promise<Answer<T>> {
  const headers: Record<string, string> = { authorization: `Bearer ${key}` };
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${sim.url}${path}`, {
    method: init.method ?? 'GET',
    headers,
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: (text ? JSON.parse(text) : undefined) as T };
}

type Created = { success: boolean; webhook: SubscriptionView };
type Logs = { logs: WebhookLogRow[]; pagination: { total: number } };

const hmac = (secret: string, body: Buffer) => createHmac('sha256', secret).update(body).digest('hex');

/** Creates a subscription through the API, expecting a 200. */
async function subscribe(
  sim: PozySimulator,
  key: string,
  settings: { name: string; url: string; secret?: string; events: string[] },
): Promise<SubscriptionView> {
  const answer = await api<Created>(sim, key, '/v1/webhooks/settings', { method: 'POST', body: settings });
  expect([answer.status, answer.body.success]).toEqual([200, true]);
  return answer.body.webhook;
}

async function settings(sim: PozySimulator, key: string): Promise<SubscriptionView[]> {
  const answer = await api<{ webhooks: SubscriptionView[] }>(sim, key, '/v1/webhooks/settings');
  expect(answer.status).toBe(200);
  return answer.body.webhooks;
}

describe('Pozy simulator: many workspaces, one per API key', () => {
  const running: PozySimulator[] = [];
  const receivers: Receiver[] = [];

  const start = async (options: Partial<SimulatorOptions> = {}) => {
    const sim = await PozySimulator.start({ apiKey: KEY_A, seed: 7, timeScale: 1_000_000, ...options });
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

  it("serves each key its own workspace: different posts, accounts and ids; another key's post is a 404; a removed key is a 401", async () => {
    const sim = await start();
    sim.world.seedExisting({ posts: 30, accounts: 4 });
    const b = sim.addWorkspace({ apiKey: KEY_B, seedExisting: { posts: 20, accounts: 3 } });

    expect(sim.workspace(KEY_B)).toBe(b);
    expect(sim.workspace(KEY_A)).toBe(sim.firstWorkspace);
    expect(sim.workspaces().map((w) => w.apiKey)).toEqual([KEY_A, KEY_B]);
    expect(b.seed).not.toBe(sim.seed);
    expect(b.world.userId).not.toBe(sim.world.userId);
    // Without a `webhook`, an added workspace has no subscription until one is made.
    expect([b.webhookId, await settings(sim, KEY_B)]).toEqual([undefined, []]);

    type List = { posts: Post[]; pagination: { total: number } };
    const postsOf = async (key: string) => (await api<List>(sim, key, '/v1/posts?limit=100&sortBy=created-asc')).body;
    const [listA, listB] = [await postsOf(KEY_A), await postsOf(KEY_B)];
    expect(listA.pagination.total).toBe(30);
    expect(listB.pagination.total).toBe(20);
    const idsA = listA.posts.map((p) => p._id);
    const idsB = listB.posts.map((p) => p._id);
    expect(idsA).toEqual(sim.world.listPosts().map((p) => p._id));
    expect(idsB).toEqual(b.world.listPosts().map((p) => p._id));
    expect(idsA.filter((id) => idsB.includes(id))).toEqual([]);
    expect(new Set(listB.posts.map((p) => p.userId))).toEqual(new Set([b.world.userId]));

    const accountIds = async (key: string) => (await api<{ accounts: { _id: string }[] }>(sim, key, '/v1/accounts')).body.accounts.map((a) => a._id);
    expect((await accountIds(KEY_A)).sort()).toEqual(
      sim.world
        .listAccounts()
        .map((a) => a._id)
        .sort(),
    );
    expect((await accountIds(KEY_B)).sort()).toEqual(
      b.world
        .listAccounts()
        .map((a) => a._id)
        .sort(),
    );

    expect((await api(sim, KEY_A, `/v1/posts/${idsB[0]}`)).status).toBe(404);
    expect((await api(sim, KEY_B, `/v1/posts/${idsB[0]}`)).status).toBe(200);

    // A key names one workspace; the first workspace is the simulator's for its whole life.
    expect(() => sim.addWorkspace({ apiKey: KEY_B })).toThrow(/exists/);
    await expect(sim.removeWorkspace(KEY_A)).rejects.toThrow(/first workspace/);

    await sim.removeWorkspace(KEY_B);
    expect((await api(sim, KEY_B, '/v1/posts')).status).toBe(401);
    expect(sim.workspace(KEY_B)).toBeUndefined();
    expect((await api(sim, KEY_A, '/v1/posts')).status).toBe(200);
    // The key can open a new workspace again.
    const again = sim.addWorkspace({ apiKey: KEY_B });
    expect((await api<List>(sim, KEY_B, '/v1/posts')).body.pagination.total).toBe(0);
    expect(again.world).not.toBe(b.world);
  });

  it("keeps each key's rate-limit window, figure and faults to itself: one key's 429s, real or injected, leave the others alone", async () => {
    const sim = await start({ rateLimitPerMinute: 5 });
    const b = sim.addWorkspace({ apiKey: KEY_B, rateLimitPerMinute: 50 });
    const storm = sim.addWorkspace({ apiKey: 'sk_test_workspace_storm', faults: { api429Rate: 1, api429RetryAfter: '30' } });
    const defaulted = sim.addWorkspace({ apiKey: 'sk_test_workspace_default' });
    expect([sim.firstWorkspace.rateLimitPerMinute, b.rateLimitPerMinute, defaulted.rateLimitPerMinute]).toEqual([5, 50, 600]);

    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) statuses.push((await api(sim, KEY_A, '/v1/posts')).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429]);

    const first = await api(sim, KEY_B, '/v1/posts');
    expect([first.status, first.headers.get('x-ratelimit-limit'), first.headers.get('x-ratelimit-remaining')]).toEqual([200, '50', '49']);
    for (let i = 0; i < 10; i++) {
      const stormed = await api(sim, storm.apiKey, '/v1/posts');
      expect([stormed.status, stormed.headers.get('retry-after')]).toEqual([429, '30']);
      expect((await api(sim, KEY_B, '/v1/posts')).status).toBe(200);
    }
    expect((await api(sim, KEY_B, '/v1/posts')).headers.get('x-ratelimit-remaining')).toBe(String(50 - 12));
    expect((await api(sim, defaulted.apiKey, '/v1/posts')).headers.get('x-ratelimit-remaining')).toBe('599');

    // Faults are per workspace: switching the first's on leaves B alone, switching the storm's off ends it.
    sim.setFaults({ api5xxRate: 1 });
    expect((await api(sim, KEY_B, '/v1/posts')).status).toBe(200);
    storm.setFaults({ api429Rate: 0 });
    expect((await api(sim, storm.apiKey, '/v1/posts')).status).toBe(200);

    expect(sim.firstWorkspace.stats().api).toMatchObject({ rateLimited: 2, requests: 7 });
    expect(b.stats().api).toMatchObject({ rateLimited: 0, requests: 13, byRoute: { 'GET /v1/posts': { '200': 13 } } });
    // Injected 429s are answers, not the window's refusals.
    expect(storm.stats().api).toMatchObject({ rateLimited: 0, byRoute: { 'GET /v1/posts': { '429': 10, '200': 1 } } });
    expect(b.acceptedAt()).toHaveLength(13);
    expect(sim.acceptedAt()).toHaveLength(5);
  });

  it("delivers a subscription made through POST its own workspace's events of the types it names, signed with its secret, and no other workspace's", async () => {
    const endpoint = await receiver();
    const sim = await start();
    const b = sim.addWorkspace({ apiKey: KEY_B });
    const subA = await subscribe(sim, KEY_A, {
      name: 'a posts',
      url: endpoint.url('/a'),
      secret: 'whsec_a',
      events: ['post.scheduled', 'account.connected'],
    });
    const subB = await subscribe(sim, KEY_B, { name: 'b accounts', url: endpoint.url('/b'), secret: 'whsec_b', events: ['account.connected'] });
    expect(subA).toEqual({
      _id: expect.stringMatching(/^[0-9a-f]{24}$/),
      name: 'a posts',
      url: endpoint.url('/a'),
      events: ['post.scheduled', 'account.connected'],
      isActive: true,
      failureCount: 0,
    });
    // The first workspace keeps its own subscription (no URL here), listed as it always was.
    expect((await settings(sim, KEY_A)).map((s) => s._id)).toEqual([sim.webhookId, subA._id]);
    expect((await settings(sim, KEY_A))[0]).toMatchObject({ _id: sim.webhookId, url: '', events: [], isActive: false });
    expect(await settings(sim, KEY_B)).toEqual([subB]);

    const emittedA: PozyEvent[] = [];
    const emittedB: PozyEvent[] = [];
    sim.world.onEvent((e) => emittedA.push(e));
    b.world.onEvent((e) => emittedB.push(e));
    for (const world of [sim.world, b.world]) {
      const profile = world.createProfile('Shop');
      const account = world.connectAccount(profile._id, 'instagram', 'shop.ig');
      const post = world.createPost({ content: 'Sale', accountIds: [account._id], scheduledFor: '2026-03-02T09:00:00Z' });
      world.publishPost(post._id);
    }
    await sim.idle();

    // Deliveries run in parallel: they arrive in any order.
    const wanted = (events: PozyEvent[], types: string[]) =>
      events
        .filter((e) => types.includes(e.event))
        .map((e) => e.id)
        .sort();
    expect(
      endpoint
        .at('/a')
        .map((d) => d.event.id)
        .sort(),
    ).toEqual(wanted(emittedA, ['post.scheduled', 'account.connected']));
    expect(
      endpoint
        .at('/b')
        .map((d) => d.event.id)
        .sort(),
    ).toEqual(wanted(emittedB, ['account.connected']));
    expect(endpoint.at('/a')).toHaveLength(2);
    expect(endpoint.at('/b')).toHaveLength(1);
    for (const delivery of endpoint.at('/a')) expect(delivery.headers['x-pozy-signature']).toBe(hmac('whsec_a', delivery.body));
    for (const delivery of endpoint.at('/b')) expect(delivery.headers['x-pozy-signature']).toBe(hmac('whsec_b', delivery.body));

    // Each key's log holds its own rows, named after its subscription.
    const logsA = (await api<Logs>(sim, KEY_A, '/v1/webhooks/logs')).body;
    const logsB = (await api<Logs>(sim, KEY_B, '/v1/webhooks/logs')).body;
    expect(logsA.logs.map((l) => [l.webhookId, l.webhookName, l.userId])).toEqual([
      [subA._id, 'a posts', sim.world.userId],
      [subA._id, 'a posts', sim.world.userId],
    ]);
    expect(logsB.logs.map((l) => [l.webhookId, l.webhookName, l.eventId])).toEqual([[subB._id, 'b accounts', endpoint.at('/b')[0].event.id]]);
    expect((await api<Logs>(sim, KEY_B, `/v1/webhooks/logs?webhookId=${subA._id}`)).body.pagination.total).toBe(0);
    expect(b.logs()).toEqual(logsB.logs);
    // A success sets lastFiredAt.
    const [listedB] = await settings(sim, KEY_B);
    expect(Date.parse(listedB.lastFiredAt ?? '')).toBeGreaterThan(Date.now() - 60_000);
    expect(b.stats().webhooks).toMatchObject({ eventsEmitted: emittedB.length, attempts: 1, successes: 1 });
  });

  it('PUT changes url, secret, events, name and isActive; inactive gets nothing (the events stay in the world); DELETE removes it', async () => {
    const endpoint = await receiver();
    const sim = await start();
    const b = sim.addWorkspace({ apiKey: KEY_B });
    const sub = await subscribe(sim, KEY_B, { name: 'mine', url: endpoint.url('/one'), secret: 'first', events: ['account.connected'] });
    const profile = b.world.createProfile('P');
    const connect = (name: string) => b.world.connectAccount(profile._id, 'bluesky', `${name}.bsky`);
    const put = (body: unknown) => api<Created>(sim, KEY_B, '/v1/webhooks/settings', { method: 'PUT', body });

    connect('a');
    await sim.idle();
    expect(endpoint.at('/one')).toHaveLength(1);

    const off = await put({ _id: sub._id, isActive: false });
    expect([off.status, off.body.webhook.isActive]).toEqual([200, false]);
    const quiet = connect('b');
    await sim.idle();
    expect(endpoint.deliveries).toHaveLength(1);
    expect(b.world.getAccount(quiet._id)).toBeDefined();
    expect(b.stats().webhooks).toMatchObject({ eventsSkipped: 1, attempts: 1 });

    const changed = await put({
      _id: sub._id,
      isActive: true,
      url: endpoint.url('/two'),
      secret: 'second',
      name: 'renamed',
      events: ['account.disconnected'],
    });
    expect(changed.body.webhook).toMatchObject({ name: 'renamed', url: endpoint.url('/two'), events: ['account.disconnected'], isActive: true });
    connect('c');
    b.world.disconnectAccount(quiet._id);
    await sim.idle();
    const [moved] = endpoint.at('/two');
    expect(endpoint.at('/two')).toHaveLength(1);
    expect([moved.event.event, moved.headers['x-pozy-signature']]).toEqual(['account.disconnected', hmac('second', moved.body)]);
    expect(b.logs()[0]).toMatchObject({ webhookName: 'renamed', url: endpoint.url('/two') });

    const deleted = await api(sim, KEY_B, `/v1/webhooks/settings?id=${sub._id}`, { method: 'DELETE' });
    expect([deleted.status, deleted.body]).toEqual([200, { success: true }]);
    expect(await settings(sim, KEY_B)).toEqual([]);
    b.world.reconnectAccount(quiet._id);
    connect('d');
    await sim.idle();
    expect(endpoint.deliveries).toHaveLength(2);
    expect((await api(sim, KEY_B, `/v1/webhooks/settings?id=${sub._id}`, { method: 'DELETE' })).status).toBe(404);
    expect((await put({ _id: sub._id, name: 'gone' })).status).toBe(404);
    // Its rows stay in the log.
    expect((await api<Logs>(sim, KEY_B, `/v1/webhooks/logs?webhookId=${sub._id}`)).body.pagination.total).toBe(2);
  });

  it('a subscription turned off while a retry waits gives the retry up; the switches stage what Pozy shows, and PUT isActive: true clears failureCount', async () => {
    const endpoint = await receiver();
    const sim = await start();
    const b = sim.addWorkspace({ apiKey: KEY_B });
    const sub = await subscribe(sim, KEY_B, { name: 'flaky', url: endpoint.url('/flaky'), events: ['account.connected'] });
    // Turned off while its first attempt is being answered, so before any retry can be due.
    endpoint.answer = () => {
      b.setSubscriptionActive(sub._id, false);
      return 500;
    };
    b.world.connectAccount(b.world.createProfile('P')._id, 'bluesky', 'p.bsky');
    await b.idle();
    expect(endpoint.deliveries).toHaveLength(1);
    expect(b.stats().webhooks).toMatchObject({ attempts: 1, failures: 1, abandoned: 1, deadLettered: 0, pending: 0 });
    expect((await settings(sim, KEY_B))[0]).toMatchObject({ isActive: false, failureCount: 1 });

    b.setSubscriptionFailureCount(sub._id, 10);
    expect((await settings(sim, KEY_B))[0]).toMatchObject({ isActive: false, failureCount: 10 });
    endpoint.answer = () => 200;
    const on = await api<Created>(sim, KEY_B, '/v1/webhooks/settings', { method: 'PUT', body: { _id: sub._id, isActive: true } });
    expect(on.body.webhook).toMatchObject({ isActive: true, failureCount: 0 });
    b.world.connectAccount(b.world.listProfiles()[0]._id, 'threads', 'p.threads');
    await b.idle();
    expect(endpoint.deliveries.map((d) => d.event.event)).toEqual(['account.connected', 'account.connected']);
    expect(() => b.setSubscriptionActive('66aa01f3c2b1e4d5f6a7b8c9', false)).toThrow(/No subscription/);
  });

  it('autoDisableAfterFailures turns a failing subscription off as Pozy does; its remaining attempts are given up', async () => {
    const endpoint = await receiver();
    endpoint.answer = () => 503;
    const sim = await start();
    const b = sim.addWorkspace({ apiKey: KEY_B, autoDisableAfterFailures: 3 });
    const sub = await subscribe(sim, KEY_B, { name: 'down', url: endpoint.url('/down'), events: ['account.connected'] });
    b.world.connectAccount(b.world.createProfile('P')._id, 'bluesky', 'p.bsky');
    await sim.idle();

    expect(endpoint.deliveries.map((d) => d.headers['x-pozy-attempt'])).toEqual(['1', '2', '3']);
    expect((await settings(sim, KEY_B))[0]).toMatchObject({ _id: sub._id, isActive: false, failureCount: 3 });
    expect(b.stats().webhooks).toMatchObject({ autoDisabled: 1, abandoned: 1, deadLettered: 0 });
    // The first workspace keeps the default: never.
    expect(sim.firstWorkspace.stats().webhooks.autoDisabled).toBe(0);
  });

  it("sends a test event only to the subscription named; another key's subscription is a 404 for the test and the redelivery", async () => {
    const endpoint = await receiver();
    const sim = await start();
    sim.addWorkspace({ apiKey: KEY_B });
    const one = await subscribe(sim, KEY_A, { name: 'one', url: endpoint.url('/one'), secret: 'k1', events: ['account.connected'] });
    const two = await subscribe(sim, KEY_A, { name: 'two', url: endpoint.url('/two'), secret: 'k2', events: ['account.connected'] });

    const test = await api(sim, KEY_A, '/v1/webhooks/test', { method: 'POST', body: { webhookId: two._id } });
    expect([test.status, test.body]).toEqual([200, { success: true, message: 'Test webhook sent successfully' }]);
    expect(endpoint.at('/one')).toHaveLength(0);
    const [sent] = endpoint.at('/two');
    expect(sent.event).toMatchObject({ event: 'webhook.test', test: true });
    expect(sent.headers['x-pozy-signature']).toBe(hmac('k2', sent.body));
    expect((await api(sim, KEY_B, '/v1/webhooks/test', { method: 'POST', body: { webhookId: two._id } })).status).toBe(404);

    sim.world.connectAccount(sim.world.createProfile('P')._id, 'bluesky', 'p.bsky');
    await sim.idle();
    const [original] = endpoint.at('/one');
    expect(endpoint.at('/two').map((d) => d.event.id)).toEqual([sent.event.id, original.event.id]);
    const redeliver = (key: string, webhookId: string) =>
      api(sim, key, '/v1/webhooks/logs/redeliver', { method: 'POST', body: { webhookId, eventId: original.event.id } });
    expect((await redeliver(KEY_A, one._id)).status).toBe(200);
    expect(endpoint.at('/one').map((d) => d.body.equals(original.body))).toEqual([true, true]);
    expect(endpoint.at('/two')).toHaveLength(2);
    expect((await redeliver(KEY_B, one._id)).status).toBe(404);
    // A subscription made after the event never had it: nothing of it is logged there.
    const later = await subscribe(sim, KEY_A, { name: 'later', url: endpoint.url('/later'), events: ['account.connected'] });
    expect((await redeliver(KEY_A, later._id)).status).toBe(422);
  });

  it("answers bad subscription input with a 400 in Pozy's error shape, naming the field, and keeps to 50 subscriptions per key", async () => {
    const sim = await start();
    sim.addWorkspace({ apiKey: KEY_B });
    const good = { name: 'n', url: 'https://example.test/hook', events: ['post.published'] };
    const cases: [unknown, string | undefined][] = [
      [[good], undefined],
      [{ ...good, name: undefined }, 'name'],
      [{ ...good, name: 'x'.repeat(51) }, 'name'],
      [{ ...good, name: '   ' }, 'name'],
      [{ ...good, url: undefined }, 'url'],
      [{ ...good, url: 'not a url' }, 'url'],
      [{ ...good, url: 'ftp://example.test/hook' }, 'url'],
      [{ ...good, events: undefined }, 'events'],
      [{ ...good, events: [] }, 'events'],
      [{ ...good, events: ['post.published', 'post.exploded'] }, 'events'],
      [{ ...good, events: 'post.published' }, 'events'],
      [{ ...good, secret: 42 }, 'secret'],
      [{ ...good, isActive: 'yes' }, 'isActive'],
      [{ ...good, customHeaders: { 'X-A': 'b' } }, 'customHeaders'],
      [{ ...good, active: true }, 'active'],
    ];
    for (const [body, param] of cases) {
      const answer = await api(sim, KEY_A, '/v1/webhooks/settings', { method: 'POST', body });
      expect([JSON.stringify(body), answer.status, answer.body]).toEqual([
        JSON.stringify(body),
        400,
        { error: expect.any(String), type: 'invalid_request_error', code: 'BAD_REQUEST', ...(param ? { param } : {}) },
      ]);
    }
    expect((await api(sim, KEY_A, '/v1/webhooks/settings', { method: 'PUT', body: { name: 'x' } })).body).toMatchObject({ param: '_id' });
    expect((await api(sim, KEY_A, '/v1/webhooks/settings', { method: 'PUT', body: { _id: sim.webhookId, events: [] } })).body).toMatchObject({
      param: 'events',
    });
    expect((await api(sim, KEY_A, '/v1/webhooks/settings', { method: 'DELETE' })).body).toMatchObject({ param: 'id' });
    expect((await api(sim, KEY_A, '/v1/webhooks/settings?id=1&x=2', { method: 'DELETE' })).status).toBe(400);
    // None of those made anything.
    expect(await settings(sim, KEY_A)).toHaveLength(1);

    // The first workspace's own subscription counts: 49 more fill its 50.
    for (let i = 0; i < 49; i++) await subscribe(sim, KEY_A, { ...good, name: `hook ${i}` });
    const full = await api(sim, KEY_A, '/v1/webhooks/settings', { method: 'POST', body: good });
    expect([full.status, full.body]).toEqual([400, { error: expect.stringMatching(/50/), type: 'invalid_request_error', code: 'BAD_REQUEST' }]);
    expect(await settings(sim, KEY_A)).toHaveLength(50);
    await subscribe(sim, KEY_B, good);
  });

  it('creates and serves 200 workspaces of 500 posts each, each key its own', async () => {
    const started = Date.now();
    const sim = await start({
      extraWorkspaces: { count: 200, keyPrefix: 'sk_test_bench', seedExisting: { posts: 500, accounts: 8 } },
    });
    const createdMs = Date.now() - started;
    // eslint-disable-next-line no-console -- the figure the bench cares about, not asserted
    console.log(`200 workspaces of 500 posts each created in ${createdMs} ms`);

    const keys = sim.workspaces().map((w) => w.apiKey);
    expect(keys).toHaveLength(201);
    expect(keys[200]).toBe('sk_test_bench-200');
    const firstIds = new Set<string>();
    for (const key of keys.slice(1)) {
      const answer = await api<{ posts: Post[]; pagination: { total: number } }>(sim, key, '/v1/posts?limit=1&sortBy=created-asc');
      expect([answer.status, answer.body.pagination.total]).toEqual([200, 500]);
      firstIds.add(answer.body.posts[0]._id);
    }
    expect(firstIds.size).toBe(200);
    const whole = await api<{ posts: Post[] }>(sim, 'sk_test_bench-137', '/v1/posts?limit=500&sortBy=created-asc');
    expect(whole.body.posts.map((p) => p._id)).toEqual(
      sim
        .workspace('sk_test_bench-137')!
        .world.listPosts()
        .map((p) => p._id),
    );
    expect(new Set(sim.workspaces().map((w) => w.seed)).size).toBe(201);
  }, 120_000);
});
