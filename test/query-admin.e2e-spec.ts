import { reconcileRequests } from './support/queue';
import { RunningService } from './support/service';
import { ServiceSpec, startSpec } from './support/spec';

const ADMIN_TOKEN = 'admin_test_token_1f9c';
const POST_ID = '66aa01f3c2b1e4d5f6a7b8c9';

async function call(
  service: RunningService,
  method: string,
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${service.baseUrl}${path}`, { method, headers });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

describe('query and admin endpoints: bad input and authentication', () => {
  let spec: ServiceSpec;
  let service: RunningService;

  beforeAll(async () => {
    // api-only: nothing reads Pozy, so what an admin call enqueues stays visible.
    spec = await startSpec('query_admin', { env: { ROLE: 'api', ADMIN_TOKEN } });
    service = spec.service;
  });

  afterAll(async () => {
    await spec?.close();
  });

  it.each([
    ['/posts?status=bogus', /status must be one of/],
    ['/posts?limit=0', /limit must not be less than 1/],
    ['/posts?limit=501', /limit must not be greater than 500/],
    ['/posts?limit=ten', /limit must be an integer/],
    ['/posts?includeDeleted=maybe', /includeDeleted must be a boolean/],
    ['/posts?updatedSince=yesterday', /updatedSince must be an ISO 8601 date/],
    ['/posts?sort=title', /sort must be id, scheduledFor, publishedAt or pozyUpdatedAt/],
    ['/posts?cursor=not-a-cursor', /cursor is not one this service returned/],
    ['/accounts?connected=yes', /connected must be a boolean/],
    ['/accounts?limit=-3', /limit must not be less than 1/],
    ['/accounts?page=2', /property page should not exist/],
  ])('GET %s answers 400 naming the parameter', async (path, message) => {
    const response = await call(service, 'GET', path);

    expect(response.status).toBe(400);
    expect(response.body.error).toMatch(/invalid_(request|query)/);
    expect(String(response.body.message)).toMatch(message);
  });

  it('answers an empty first page, and 404 for what the mirror never saw', async () => {
    expect(await call(service, 'GET', '/posts')).toEqual({ status: 200, body: { data: [], nextCursor: null } });
    expect(await call(service, 'GET', '/accounts')).toEqual({ status: 200, body: { data: [], nextCursor: null } });
    expect(await call(service, 'GET', `/posts/${POST_ID}`)).toMatchObject({ status: 404, body: { error: 'not_found' } });
    expect(await call(service, 'GET', '/accounts/nope')).toMatchObject({ status: 404, body: { error: 'not_found' } });
  });

  it('reports the sync status from the database', async () => {
    const response = await call(service, 'GET', '/sync/status');

    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({
      queue: { pendingReads: 0, oldestPendingAgeMs: null, jobs: 0, failingJobs: 0 },
      events: { received: 0, lastHour: 0, lastReceivedAt: null },
      mirror: { posts: 0, deletedPosts: 0, accounts: 0, removedAccounts: 0, lastSyncedAt: null },
      deadLetters: { delivery: 0, ack: 0 },
      spool: { pending: 0 },
      backfill: { lastRun: null, gaps: [] },
    });
  });

  describe('POST /admin/resync/*', () => {
    beforeEach(() => service.pool.query('TRUNCATE reconcile_request'));

    it.each([
      ['no token', {}, 401, 'missing_token'],
      ['a token that is not Bearer', { authorization: `Basic ${ADMIN_TOKEN}` }, 401, 'missing_token'],
      ['a wrong token', { authorization: 'Bearer wrong' }, 403, 'invalid_token'],
      ['a token one character short', { authorization: `Bearer ${ADMIN_TOKEN.slice(0, -1)}` }, 403, 'invalid_token'],
    ])('refuses %s and enqueues nothing', async (_name, headers, status, error) => {
      const response = await call(service, 'POST', `/admin/resync/posts/${POST_ID}`, headers);

      expect(response).toMatchObject({ status, body: { statusCode: status, error } });
      expect(await reconcileRequests(service.pool)).toEqual([]);
    });

    it('refuses an id that is not a Pozy id', async () => {
      const response = await call(service, 'POST', '/admin/resync/posts/not-an-id', { authorization: `Bearer ${ADMIN_TOKEN}` });

      expect(response).toMatchObject({ status: 400, body: { error: 'invalid_request' } });
      expect(String(response.body.message)).toMatch(/id must be a Pozy id: 24 lower-case hexadecimal digits/);
      expect(await reconcileRequests(service.pool)).toEqual([]);
    });

    it('asks for a read of a post and of a profile now', async () => {
      const auth = { authorization: `Bearer ${ADMIN_TOKEN}` };
      const post = await call(service, 'POST', `/admin/resync/posts/${POST_ID}`, auth);
      const profile = await call(service, 'POST', '/admin/resync/profiles/66a9ffee00112233445566aa/accounts', auth);

      expect(post).toEqual({ status: 202, body: { accepted: true, reconcile: `post:${POST_ID}` } });
      expect(profile).toEqual({ status: 202, body: { accepted: true, reconcile: 'profile:66a9ffee00112233445566aa' } });
      expect((await reconcileRequests(service.pool)).map((r) => [r.key, r.due_at.getTime() <= Date.now()])).toEqual([
        [`post:${POST_ID}`, true],
        ['profile:66a9ffee00112233445566aa', true],
      ]);
    });
  });
});

describe('admin endpoints without ADMIN_TOKEN', () => {
  let spec: ServiceSpec;
  let service: RunningService;

  beforeAll(async () => {
    spec = await startSpec('admin_closed', { env: { ROLE: 'api' } });
    service = spec.service;
  });

  afterAll(async () => {
    await spec?.close();
  });

  it('are closed (403), whatever token is sent', async () => {
    const response = await call(service, 'POST', `/admin/resync/posts/${POST_ID}`, { authorization: 'Bearer anything' });

    expect(response).toMatchObject({ status: 403, body: { error: 'admin_disabled' } });
    expect(await reconcileRequests(service.pool)).toEqual([]);
  });
});
