import type { LookupAddress } from 'node:dns';
import { randomUUID } from 'node:crypto';
import { HostResolver } from '../src/notifications/subscriber-address-guard';
import { HARNESS_ADMIN_TOKEN, settled } from './support/harness';
import { waitFor } from './support/service';
import { TestSubscriber, verifies } from './support/subscriber';
import { SimulatorSpec, startSpec } from './support/spec';

const ADMIN = { authorization: `Bearer ${HARNESS_ADMIN_TOKEN}` };
const JSON_ADMIN = { ...ADMIN, 'content-type': 'application/json' };
/** A public address (example.com's): what a stubbed name answers before it moves. */
const PUBLIC_ADDRESS = '93.184.215.14';

interface ErrorBody {
  statusCode: number;
  error: string;
  message: string;
  details: Array<{ field: string; problems: string[] }>;
}

interface Letter {
  kind: string;
  reason: string;
  error: string;
  attempts: number;
  payload: { notificationId: string };
}

/**
 * Subscription URLs that point inside (issue 13): refused when created or changed, and again when connecting, with
 * NOTIFY_ALLOWED_HOSTS letting a team's internal receiver through; redirects are never followed.
 *
 * Names resolve through a stub in place of the system resolver (the service's HostResolver, which both the URL
 * check and undici's `connect` lookup ask), so a name can point at loopback, or move there after creation, without
 * DNS or /etc/hosts. Subscriptions that only show what is accepted are inactive: nothing is ever sent to a public
 * address.
 */
describe('subscriber addresses: the SSRF guard', () => {
  let harness: SimulatorSpec;
  const subscribers: TestSubscriber[] = [];
  /** What each stubbed name resolves to; any other name does not resolve. */
  const names = new Map<string, string>();
  const world = () => harness.sim.world;
  const api = (path: string, init: RequestInit = {}) => fetch(`${harness.service.baseUrl}${path}`, init);

  async function subscriber(): Promise<TestSubscriber> {
    const s = await TestSubscriber.start();
    subscribers.push(s);
    return s;
  }

  /** The subscriber's URL, reached through a name instead of its loopback address. */
  const through = (name: string, s: TestSubscriber) => {
    const url = new URL(s.url);
    url.hostname = name;
    return url.toString();
  };

  const create = (body: Record<string, unknown>) =>
    api('/admin/subscriptions', { method: 'POST', headers: JSON_ADMIN, body: JSON.stringify({ eventTypes: ['post.changed'], ...body }) });

  async function subscribe(body: Record<string, unknown>): Promise<{ id: string; secret: string; url: string }> {
    const response = await create(body);
    expect(response.status).toBe(201);
    return (await response.json()) as { id: string; secret: string; url: string };
  }

  const count = async () => (await harness.service.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM subscription')).rows[0].n;

  /** A profile with an account, its creation settled: notifications for it come from what the test does next. */
  async function profile(): Promise<{ profileId: string; accountId: string }> {
    const created = world().createProfile(`Brand ${randomUUID().slice(0, 6)}`);
    const account = world().connectAccount(created._id, 'linkedin', 'ssrf');
    await settled(harness);
    return { profileId: created._id, accountId: account._id };
  }

  async function notificationOf(subscriptionId: string) {
    const { rows } = await harness.service.pool.query<{ id: string; state: string; attempts: number; next_attempt_at: Date | null }>(
      'SELECT id, state, attempts, next_attempt_at FROM notification WHERE subscription_id = $1',
      [subscriptionId],
    );
    return rows;
  }

  /** The subscription's one notification, once it has reached `state`. */
  const settledIn = (state: string, subscriptionId: string) =>
    waitFor(`the notification to be ${state}`, async () => {
      const rows = await notificationOf(subscriptionId);
      return rows.length === 1 && rows[0].state === state ? rows[0] : undefined;
    });

  async function letterOf(notificationId: string): Promise<Letter | undefined> {
    const letters = (await (await api('/admin/dead-letters?queue=delivery', { headers: ADMIN })).json()) as { data: Letter[] };
    return letters.data.find((l) => l.payload.notificationId === notificationId);
  }

  beforeAll(async () => {
    // Only a name is allowed: loopback itself (the test support's default) is not.
    harness = await startSpec('ssrf', { env: { NOTIFY_ALLOWED_HOSTS: 'receiver.internal' }, simulator: {} });
    jest.spyOn(harness.service.app.get(HostResolver), 'lookup').mockImplementation(async (hostname: string): Promise<LookupAddress[]> => {
      const address = names.get(hostname);
      if (address === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
      return [{ address, family: address.includes(':') ? 6 : 4 }];
    });
    names.set('public.example.com', PUBLIC_ADDRESS);
    names.set('loopback.example.com', '127.0.0.1');
    names.set('metadata.example.com', '169.254.169.254');
    names.set('receiver.internal', '127.0.0.1');
  });

  afterAll(async () => {
    await Promise.all(subscribers.map((s) => s.close()));
    await harness?.close();
  });

  const INSIDE = /\(subscribers at loopback, private, link-local and other internal addresses are refused unless NOTIFY_ALLOWED_HOSTS allows them\)$/;

  describe.each([
    ['loopback', 'http://127.0.0.1:8080/hook', /^url must not point inside: 127\.0\.0\.1 is in 127\.0\.0\.0\/8 \(loopback\)/],
    ['private 10/8', 'http://10.0.0.5/hook', /: 10\.0\.0\.5 is in 10\.0\.0\.0\/8 \(private\)/],
    ['private 172.16/12', 'http://172.16.0.1/hook', /: 172\.16\.0\.1 is in 172\.16\.0\.0\/12 \(private\)/],
    ['private 192.168/16', 'https://192.168.1.10/hook', /: 192\.168\.1\.10 is in 192\.168\.0\.0\/16 \(private\)/],
    ['cloud metadata', 'http://169.254.169.254/latest/meta-data/', /: 169\.254\.169\.254 is in 169\.254\.169\.254\/32 \(cloud metadata\)/],
    ['IPv6 loopback', 'http://[::1]:8080/hook', /: ::1 is in ::1\/128 \(loopback\)/],
    ['IPv6 link-local', 'http://[fe80::1]/hook', /: fe80::1 is in fe80::\/10 \(link-local\)/],
    ['IPv6 unique local', 'http://[fc00::1]/hook', /: fc00::1 is in fc00::\/7 \(unique local \(private\)\)/],
    ['IPv4-mapped IPv6', 'http://[::ffff:127.0.0.1]/hook', /: ::ffff:7f00:1 carries 127\.0\.0\.1, which is in 127\.0\.0\.0\/8 \(loopback\)/],
    [
      'IPv4-translated IPv6 (SIIT)',
      'http://[::ffff:0:127.0.0.1]/hook',
      /: ::ffff:0:7f00:1 carries 127\.0\.0\.1, which is in 127\.0\.0\.0\/8 \(loopback\)/,
    ],
    [
      'IPv4-translated IPv6 (SIIT), in full',
      'http://[0:0:0:0:FFFF:0:A9FE:A9FE]/latest/meta-data/',
      /: ::ffff:0:a9fe:a9fe carries 169\.254\.169\.254, which is in 169\.254\.169\.254\/32 \(cloud metadata\)/,
    ],
    ['hex', 'http://0x7f000001/hook', /: 127\.0\.0\.1 is in 127\.0\.0\.0\/8 \(loopback\)/],
    ['the unspecified address', 'http://0.0.0.0:8080/hook', /: 0\.0\.0\.0 is in 0\.0\.0\.0\/8 \(unspecified/],
    ['localhost', 'http://localhost:8080/hook', /: localhost is a loopback name/],
    [
      'a name resolving to loopback',
      'https://loopback.example.com/hook',
      /: loopback\.example\.com resolves to 127\.0\.0\.1, and 127\.0\.0\.1 is in 127\.0\.0\.0\/8 \(loopback\)/,
    ],
    [
      'a name resolving to the metadata address',
      'https://metadata.example.com/',
      /: metadata\.example\.com resolves to 169\.254\.169\.254, .*\(cloud metadata\)/,
    ],
  ])('%s: %s', (_case, url, problem) => {
    it('is refused at creation with a 400 naming url and the range; nothing is stored', async () => {
      const before = await count();
      const response = await create({ url });
      expect(response.status).toBe(400);
      const body = (await response.json()) as ErrorBody;
      expect(body).toMatchObject({
        statusCode: 400,
        error: 'invalid_request',
        details: [{ field: 'url', problems: [expect.stringMatching(problem)] }],
      });
      expect(body.details[0].problems[0]).toMatch(INSIDE);
      expect(body.message).toMatch(/^Invalid request: url: url must not point inside: /);
      expect(await count()).toBe(before);
    });

    it('is refused by PATCH, and the subscription keeps its URL', async () => {
      const { id } = await subscribe({ url: 'https://public.example.com/hook', active: false });
      const response = await api(`/admin/subscriptions/${id}`, { method: 'PATCH', headers: JSON_ADMIN, body: JSON.stringify({ url }) });
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({
        error: 'invalid_request',
        details: [{ field: 'url', problems: [expect.stringMatching(problem)] }],
      });
      const { rows } = await harness.service.pool.query<{ url: string }>('SELECT url FROM subscription WHERE id = $1', [id]);
      expect(rows[0].url).toBe('https://public.example.com/hook');
    });
  });

  // The URL check refuses these spellings of 127.0.0.1 before the guard sees them; its message says what they are.
  describe.each([
    ['decimal', 'http://2130706433/hook', '2130706433'],
    ['octal', 'http://0177.0.0.1/hook', '0177.0.0.1'],
  ])('loopback written in %s: %s', (_case, url, written) => {
    const problem = `url must be an http:// or https:// URL (its host ${written} is the address 127.0.0.1 written another way: write it as 127.0.0.1; 127.0.0.1 is in 127.0.0.0/8 (loopback))`;

    it('is refused at creation, naming url and the address', async () => {
      const before = await count();
      const response = await create({ url });
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({ statusCode: 400, error: 'invalid_request', details: [{ field: 'url', problems: [problem] }] });
      expect(await count()).toBe(before);
    });

    it('is refused by PATCH', async () => {
      const { id } = await subscribe({ url: 'https://public.example.com/hook', active: false });
      const response = await api(`/admin/subscriptions/${id}`, { method: 'PATCH', headers: JSON_ADMIN, body: JSON.stringify({ url }) });
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({ details: [{ field: 'url', problems: [problem] }] });
    });
  });

  it('refuses credentials in the URL (user:password@), at creation and by PATCH: they would never be sent', async () => {
    const before = await count();
    const url = 'https://user:pass@public.example.com/hook';
    const problem =
      'url must not carry credentials (user:password@): they would never be sent; subscribers authenticate notifications by their signature';
    const created = await create({ url });
    expect(created.status).toBe(400);
    expect(await created.json()).toMatchObject({
      error: 'invalid_request',
      message: `Invalid request: url: ${problem}`,
      details: [{ field: 'url', problems: [problem] }],
    });
    expect(await count()).toBe(before);

    const { id } = await subscribe({ url: 'https://public.example.com/hook', active: false });
    const patched = await api(`/admin/subscriptions/${id}`, { method: 'PATCH', headers: JSON_ADMIN, body: JSON.stringify({ url }) });
    expect(patched.status).toBe(400);
    expect(await patched.json()).toMatchObject({ details: [{ field: 'url', problems: [problem] }] });
  });

  it('refuses a URL the URL check lets through but no connection could parse, at creation and by PATCH', async () => {
    const before = await count();
    const url = 'http://[::%zz1]:1/x';
    const problem = 'url must be an http:// or https:// URL (this one does not parse as a URL, WHATWG URL Standard)';
    const created = await create({ url });
    expect([created.status, await created.json()]).toEqual([400, expect.objectContaining({ details: [{ field: 'url', problems: [problem] }] })]);
    expect(await count()).toBe(before);

    const { id } = await subscribe({ url: 'https://public.example.com/hook', active: false });
    const patched = await api(`/admin/subscriptions/${id}`, { method: 'PATCH', headers: JSON_ADMIN, body: JSON.stringify({ url }) });
    expect([patched.status, await patched.json()]).toEqual([400, expect.objectContaining({ details: [{ field: 'url', problems: [problem] }] })]);
  });

  it('accepts a public address, and a name that does not resolve yet (connections are checked again)', async () => {
    // Inactive: nothing is ever sent to them.
    expect((await subscribe({ url: `http://${PUBLIC_ADDRESS}/hook`, active: false })).url).toBe(`http://${PUBLIC_ADDRESS}/hook`);
    expect((await subscribe({ url: 'https://not-yet.example.com/hook', active: false })).url).toBe('https://not-yet.example.com/hook');
  });

  it('delivers to a host NOTIFY_ALLOWED_HOSTS allows, though it resolves to loopback (set by PATCH)', async () => {
    const endpoint = await subscriber();
    const { profileId, accountId } = await profile();
    const subscription = await subscribe({ url: 'https://public.example.com/hook', profileIds: [profileId] });
    const url = through('receiver.internal', endpoint);
    const patched = await api(`/admin/subscriptions/${subscription.id}`, { method: 'PATCH', headers: JSON_ADMIN, body: JSON.stringify({ url }) });
    expect(patched.status).toBe(200);
    expect(await patched.json()).toMatchObject({ id: subscription.id, url });

    const post = world().createPost({ content: 'for the internal receiver', accountIds: [accountId], scheduledFor: Date.now() + 60_000 });
    await settled(harness);
    const delivered = await settledIn('delivered', subscription.id);
    expect(delivered.attempts).toBe(1);
    expect(endpoint.received.map((r) => [r.json.type, r.json.data.id])).toEqual([['post.changed', post._id]]);
    expect(verifies(subscription.secret, endpoint.received[0])).toBe(true);
  });

  it('refuses at connection time a name that resolves to loopback after creation: dead-lettered, never connected', async () => {
    const endpoint = await subscriber();
    const { profileId, accountId } = await profile();
    names.set('moving.example.com', PUBLIC_ADDRESS);
    const subscription = await subscribe({ url: through('moving.example.com', endpoint), profileIds: [profileId] });
    // The name now points at the subscriber on loopback (DNS rebinding, or a record changed).
    names.set('moving.example.com', '127.0.0.1');

    world().createPost({ content: 'not for the inside', accountIds: [accountId], scheduledFor: Date.now() + 60_000 });
    await settled(harness);
    const dead = await settledIn('dead', subscription.id);
    expect(dead).toMatchObject({ attempts: 1, next_attempt_at: null });
    expect(await letterOf(dead.id)).toMatchObject({
      kind: 'notification',
      reason: 'forbidden_address',
      attempts: 1,
      error: expect.stringMatching(
        /^moving\.example\.com resolves to 127\.0\.0\.1, and 127\.0\.0\.1 is in 127\.0\.0\.0\/8 \(loopback\): refused before connecting \(/,
      ),
    });
    const detail = (await (await api(`/admin/notifications/${dead.id}`, { headers: ADMIN })).json()) as {
      attemptHistory: Array<{ statusCode: number | null; outcome: string }>;
    };
    expect(detail.attemptHistory).toMatchObject([{ statusCode: null, outcome: 'dead' }]);
    expect(endpoint.connections).toBe(0);
    expect(endpoint.received).toEqual([]);
  });

  it('dead-letters a redirect at once (reason redirect), never following it nor retrying', async () => {
    const endpoint = await subscriber();
    endpoint.answer([], { status: 301, headers: { location: 'http://169.254.169.254/latest/meta-data/iam?token=secret' } });
    const { profileId, accountId } = await profile();
    const subscription = await subscribe({ url: through('receiver.internal', endpoint), profileIds: [profileId] });

    world().createPost({ content: 'moved permanently', accountIds: [accountId], scheduledFor: Date.now() + 60_000 });
    await settled(harness);
    const dead = await settledIn('dead', subscription.id);
    expect(dead).toMatchObject({ attempts: 1, next_attempt_at: null });
    expect(await letterOf(dead.id)).toMatchObject({
      kind: 'notification',
      reason: 'redirect',
      attempts: 1,
      // The location's origin only: its path and query may carry a token.
      error: 'HTTP 301 to http://169.254.169.254: redirects are not followed; give the subscription the URL that receives',
    });
    // One request, nothing pending: no retry is scheduled.
    expect(endpoint.received).toHaveLength(1);
    const { rows } = await harness.service.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM notification WHERE subscription_id = $1 AND state = 'pending'`,
      [subscription.id],
    );
    expect(rows[0].n).toBe(0);
  });
});
