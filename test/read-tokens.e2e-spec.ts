import { Logger } from '@nestjs/common';
import { BackfillRunRepository } from '../src/backfill/backfill-run.repository';
import { DeadLetterRepository } from '../src/dead-letters/dead-letter.repository';
import { createTestDatabase, TestDatabase } from './support/database';
import { Harness, HARNESS_ADMIN_TOKEN, settled, startHarness } from './support/harness';
import { getJson, Json, request } from './support/http';
import { RunningService, startService, waitFor } from './support/service';
import { TestSubscriber } from './support/subscriber';
import { DEFAULT_WORKSPACE } from '../src/common/workspace-id';

// Two read tokens at once: a rotation under way. Neither is the admin token.
const READ_OLD = 'read_old_4c1d9e7a2b';
const READ_NEW = 'read_new_8f2a6b3c0d';
const WRONG = 'read_not_a_token_5e6f';
// Texts an anonymous reader must never see: what Pozy answered, as a dead letter and a failed backfill keep it.
const LETTER_ERROR = 'Pozy answered 422 for the draft about the merger with Northwind';
const BACKFILL_ERROR = 'Pozy answered 500 reading the delivery log of workspace ws_31337';
// A subscriber's URL whose path carries its own token.
const SUBSCRIBER_PATH = '/hooks/pozy-sync/tok_9a8b7c6d';

const bearer = (token: string | undefined): Record<string, string> => (token === undefined ? {} : { authorization: `Bearer ${token}` });

interface StatusBody {
  redacted: boolean;
  mirror: { posts: number; accounts: number };
  deadLetters: { delivery: number };
  backfill: { lastRun: { id: string; status: string; error: string | null } | null };
  notifications: {
    subscribers: Array<{
      id: string | null;
      origin: string | null;
      active: boolean;
      health: { state: string; lastError: string | null; pausedReason: string | null };
    }>;
  };
}

describe('read tokens (API_TOKENS) and STATUS_PUBLIC', () => {
  let db: TestDatabase;
  let harness: Harness;
  let subscriber: TestSubscriber;
  let service: RunningService;
  const known = { post: '', account: '', subscription: '', letter: '', backfillRun: '', posts: 0, accounts: 0 };
  let warnings: string[] = [];

  /** The warnings the service logs while `start` runs (Nest's Logger, whatever LOG_LEVEL lets through). */
  async function warnedDuring<T>(start: () => Promise<T>): Promise<T> {
    const spy = jest.spyOn(Logger.prototype, 'warn');
    try {
      return await start();
    } finally {
      warnings = spy.mock.calls.map((args) => String(args[0]));
      spy.mockRestore();
    }
  }
  const openReadWarnings = () => warnings.filter((w) => /API_TOKENS is not set/.test(w));

  beforeAll(async () => {
    db = await createTestDatabase('read_tokens');
    subscriber = await TestSubscriber.start(SUBSCRIBER_PATH);
    // Every notification fails: the subscription gets a last error, and stays failing.
    subscriber.answer([], 500);
    harness = await warnedDuring(() => startHarness(db.url, { env: { API_TOKENS: `${READ_OLD},${READ_NEW}` } }));
    service = harness.service;

    const created = await fetch(`${service.baseUrl}/admin/subscriptions`, {
      method: 'POST',
      headers: { ...bearer(HARNESS_ADMIN_TOKEN), 'content-type': 'application/json' },
      body: JSON.stringify({ url: subscriber.url, eventTypes: ['post.changed'] }),
    });
    expect(created.status).toBe(201);
    known.subscription = ((await created.json()) as { id: string }).id;

    harness.sim.world.seedWorld({ profiles: 1, accountsPerProfile: 2, posts: 4 });
    await settled(harness);
    const { rows: posts } = await service.pool.query<{ id: string }>('SELECT id FROM post WHERE deleted_at IS NULL ORDER BY id');
    const { rows: accounts } = await service.pool.query<{ id: string }>('SELECT id FROM account WHERE removed_at IS NULL ORDER BY id');
    [known.post, known.account, known.posts, known.accounts] = [posts[0].id, accounts[0].id, posts.length, accounts.length];
    await waitFor('the failing subscriber to be recorded', async () => {
      const { rows } = await service.pool.query<{ last_error: string | null }>('SELECT last_error FROM subscription WHERE id = $1', [
        known.subscription,
      ]);
      return rows[0]?.last_error ?? undefined;
    });

    // A dead letter about a known post, and a failed backfill run, each with an error text, through the service's own stores.
    known.letter = await service.app.get(DeadLetterRepository).addReconcile({
      workspaceId: DEFAULT_WORKSPACE,
      resourceKey: `post:${known.post}`,
      payload: { resource: 'post', id: known.post },
      reason: 'Pozy answered something retrying cannot change',
      error: LETTER_ERROR,
      attempts: 1,
      firstFailureAt: new Date(),
    });
    const runs = service.app.get(BackfillRunRepository);
    known.backfillRun = '0b5f5c9e-2f4e-4d8a-9a51-8c1f7e3b6a20';
    await runs.create({ workspaceId: DEFAULT_WORKSPACE, id: known.backfillRun, trigger: 'admin', scanFrom: new Date() });
    await runs.finish(known.backfillRun, 'failed', BACKFILL_ERROR);
  });

  afterAll(async () => {
    await harness?.close();
    await subscriber?.close();
    await db?.drop();
  });

  it('does not warn about open reads when API_TOKENS is set', () => {
    expect(openReadWarnings()).toEqual([]);
  });

  describe('the query endpoints', () => {
    const ENDPOINTS = ['/posts', '/posts/:id', '/accounts', '/accounts/:id'] as const;
    const path = (endpoint: (typeof ENDPOINTS)[number]) => endpoint.replace(':id', endpoint.startsWith('/posts') ? known.post : known.account);
    const CASES: Array<[string, Record<string, string>, number, string | null]> = [
      ['no token', {}, 401, 'missing_token'],
      ['another scheme', { authorization: `Basic ${READ_OLD}` }, 401, 'missing_token'],
      ['an empty Bearer', { authorization: 'Bearer ' }, 401, 'missing_token'],
      ['a wrong token', bearer(WRONG), 403, 'invalid_token'],
      ['a read token one character longer', bearer(`${READ_NEW}x`), 403, 'invalid_token'],
      ['the old read token', bearer(READ_OLD), 200, null],
      ['the new read token', bearer(READ_NEW), 200, null],
      ['the admin token', bearer(HARNESS_ADMIN_TOKEN), 200, null],
    ];

    it.each(ENDPOINTS.flatMap((endpoint) => CASES.map(([name, headers, status, error]) => [endpoint, name, headers, status, error] as const)))(
      'GET %s with %s',
      async (endpoint, _name, headers, status, error) => {
        const response = await request(service, path(endpoint), { headers });
        const body = JSON.parse(response.text) as Json;

        expect(response.status).toBe(status);
        if (error !== null) {
          expect(body).toEqual({
            statusCode: status,
            error,
            message: expect.stringMatching(error === 'missing_token' ? /Bearer/ : /not one of API_TOKENS/),
          });
          // Nothing of the mirror in a refusal.
          expect(response.text).not.toContain(known.post);
          expect(response.text).not.toContain(known.account);
        } else if (endpoint.endsWith(':id')) {
          expect(body.id).toBe(endpoint.startsWith('/posts') ? known.post : known.account);
        } else {
          const ids = (body as { data: Array<{ id: string }> }).data.map((row) => row.id);
          expect(ids).toContain(endpoint === '/posts' ? known.post : known.account);
          expect(ids).toHaveLength(endpoint === '/posts' ? known.posts : known.accounts);
        }
      },
    );

    it.each(
      ['/changes?limit=1000', '/changes/head'].flatMap((endpoint) =>
        CASES.map(([name, headers, status, error]) => [endpoint, name, headers, status, error] as const),
      ),
    )('GET %s (the change feed) with %s', async (endpoint, _name, headers, status, error) => {
      const response = await request(service, endpoint, { headers });
      const body = JSON.parse(response.text) as Json;

      expect(response.status).toBe(status);
      if (error !== null) {
        expect(body).toMatchObject({ statusCode: status, error });
        expect(response.text).not.toContain(known.post);
      } else if (endpoint === '/changes/head') {
        expect(body.cursor).toMatch(/^[1-9]\d*$/);
      } else {
        expect((body as { data: Array<{ id: string }> }).data.map((change) => change.id)).toContain(known.post);
      }
    });

    it('refuses a request without a token before it validates its query', async () => {
      expect(await getJson(service, '/posts?limit=0')).toMatchObject({ status: 401, body: { error: 'missing_token' } });
      expect(await getJson(service, '/posts?limit=0', { token: READ_OLD })).toMatchObject({ status: 400, body: { error: 'invalid_request' } });
    });

    it('never lets a read token into the admin endpoints', async () => {
      expect(await getJson(service, '/admin/dead-letters?queue=delivery', { token: READ_OLD })).toEqual({
        status: 403,
        body: { statusCode: 403, error: 'invalid_token', message: 'The admin token is not valid' },
      });
    });
  });

  describe('STATUS_PUBLIC=true (the default)', () => {
    it('answers GET /sync/status without a token: counts and states, no ids, no error texts', async () => {
      const { status, text } = await request(service, '/sync/status');
      const body = JSON.parse(text) as StatusBody;

      expect(status).toBe(200);
      expect(body.redacted).toBe(true);
      expect(body.mirror).toMatchObject({ posts: known.posts, accounts: known.accounts });
      expect(body.deadLetters.delivery).toBe(1);
      expect(body.backfill.lastRun).toMatchObject({ id: known.backfillRun, status: 'failed', error: null });
      expect(body.notifications.subscribers).toEqual([
        { id: null, origin: null, active: true, health: expect.objectContaining({ state: 'failing', lastError: null, pausedReason: null }) },
      ]);
      for (const secret of [known.post, known.account, known.subscription, new URL(subscriber.url).host, BACKFILL_ERROR, 'HTTP 500']) {
        expect(text).not.toContain(secret);
      }
    });

    it.each([
      ['the old read token', READ_OLD],
      ['the new read token', READ_NEW],
      ['the admin token', HARNESS_ADMIN_TOKEN],
    ])('answers GET /sync/status whole with %s', async (_name, token) => {
      const { status, body } = await getJson<StatusBody>(service, '/sync/status', { token });

      expect(status).toBe(200);
      expect(body.redacted).toBe(false);
      expect(body.mirror).toMatchObject({ posts: known.posts, accounts: known.accounts });
      expect(body.backfill.lastRun).toMatchObject({ id: known.backfillRun, status: 'failed', error: BACKFILL_ERROR });
      expect(body.notifications.subscribers).toEqual([
        {
          id: known.subscription,
          origin: new URL(subscriber.url).origin,
          active: true,
          health: expect.objectContaining({ state: 'failing', lastError: 'HTTP 500' }),
        },
      ]);
    });

    it('shows the status page without a token: the figures and the dead letter, without its post or any error text', async () => {
      const { status, text } = await request(service, '/');

      expect(status).toBe(200);
      expect(text).toContain('id="redacted-note"');
      expect(text).toContain(`${known.posts} posts, ${known.accounts} accounts mirrored`);
      expect(text).toMatch(/id="dead-letter-count">1</);
      // The letter is there (its Replay button needs its id), with its reason but not its post nor its error.
      expect(text).toContain(`data-dead-letter="${known.letter}"`);
      expect(text).toContain('Pozy answered something retrying cannot change');
      expect(text).toMatch(/<span class="badge failing">failing<\/span>/);
      for (const secret of [known.post, known.subscription, new URL(subscriber.url).host, LETTER_ERROR, BACKFILL_ERROR, 'HTTP 500']) {
        expect(text).not.toContain(secret);
      }
    });

    it('shows the status page whole with a read token', async () => {
      const { status, text } = await request(service, '/', { headers: bearer(READ_NEW) });

      expect(status).toBe(200);
      expect(text).not.toContain('id="redacted-note"');
      expect(text).toContain(`${known.posts} posts, ${known.accounts} accounts mirrored`);
      for (const detail of [
        `post:${known.post}`,
        LETTER_ERROR,
        BACKFILL_ERROR,
        `data-subscriber="${known.subscription}"`,
        new URL(subscriber.url).origin,
        'HTTP 500',
      ]) {
        expect(text).toContain(detail);
      }
    });

    it.each([
      ['/sync/status', 'the status'],
      ['/', 'the status page'],
    ])('refuses GET %s (%s) with a wrong token, even though anonymous requests pass', async (path) => {
      expect(await getJson(service, path, { token: WRONG })).toEqual({
        status: 403,
        body: { statusCode: 403, error: 'invalid_token', message: 'The token is not one of API_TOKENS, nor ADMIN_TOKEN' },
      });
    });
  });

  describe('STATUS_PUBLIC=false, after the rotation (only the new read token left)', () => {
    let closed: RunningService;

    beforeAll(async () => {
      // A second replica on the same database, configured as the rotation ends.
      closed = await startService(db.url, { ROLE: 'api', API_TOKENS: READ_NEW, ADMIN_TOKEN: HARNESS_ADMIN_TOKEN, STATUS_PUBLIC: 'false' });
    });

    afterAll(() => closed?.close());

    it.each([
      ['/sync/status', 'no token', undefined, 401, 'missing_token'],
      ['/sync/status', 'the dropped read token', READ_OLD, 403, 'invalid_token'],
      ['/', 'no token', undefined, 401, 'missing_token'],
      ['/', 'the dropped read token', READ_OLD, 403, 'invalid_token'],
      ['/posts', 'the dropped read token', READ_OLD, 403, 'invalid_token'],
    ])('refuses GET %s with %s', async (path, _name, token, status, error) => {
      const { status: answered, body } = await getJson(closed, path, { token });
      expect(answered).toBe(status);
      expect(body).toMatchObject({ statusCode: status, error });
    });

    it.each([
      ['the new read token', READ_NEW],
      ['the admin token', HARNESS_ADMIN_TOKEN],
    ])('answers the status whole with %s', async (_name, token) => {
      const status = await getJson<StatusBody>(closed, '/sync/status', { token });
      expect(status).toMatchObject({ status: 200, body: { redacted: false, backfill: { lastRun: { error: BACKFILL_ERROR } } } });
      const page = await request(closed, '/', { headers: bearer(token) });
      expect(page.status).toBe(200);
      expect(page.text).toContain(LETTER_ERROR);
      expect((await getJson<{ data: unknown[] }>(closed, '/posts', { token })).body.data).toHaveLength(known.posts);
    });

    it('keeps /health and /metrics open', async () => {
      expect(await getJson(closed, '/health/live')).toMatchObject({ status: 200 });
      expect(await getJson(closed, '/health/ready')).toMatchObject({ status: 200 });
      const metrics = await request(closed, '/metrics');
      expect(metrics.status).toBe(200);
      expect(metrics.text).toContain('pozy_sync_dead_letters');
    });
  });

  describe('API_TOKENS unset: reads open, as before', () => {
    let open: RunningService;

    beforeAll(async () => {
      open = await warnedDuring(() => startService(db.url, { ROLE: 'api', ADMIN_TOKEN: HARNESS_ADMIN_TOKEN }));
    });

    afterAll(() => open?.close());

    it('warns once at boot that the query endpoints are open', () => {
      expect(openReadWarnings()).toEqual([expect.stringMatching(/^API_TOKENS is not set: the query endpoints .* are open/)]);
    });

    it.each([
      ['no token', undefined],
      ['any token at all', WRONG],
    ])('answers the query endpoints with %s', async (_name, token) => {
      const posts = await getJson<{ data: Array<{ id: string }> }>(open, '/posts', { token });
      expect(posts.status).toBe(200);
      expect(posts.body.data.map((p) => p.id)).toContain(known.post);
      expect(await getJson(open, `/posts/${known.post}`, { token })).toMatchObject({ status: 200, body: { id: known.post } });
      expect((await getJson<{ data: unknown[] }>(open, '/accounts', { token })).body.data).toHaveLength(known.accounts);
      expect(await getJson(open, `/accounts/${known.account}`, { token })).toMatchObject({ status: 200, body: { id: known.account } });
    });

    it('answers the status whole without a token: everyone may read the mirror anyway', async () => {
      const { status, body } = await getJson<StatusBody>(open, '/sync/status');
      expect(status).toBe(200);
      expect(body.redacted).toBe(false);
      expect(body.notifications.subscribers[0]).toMatchObject({ id: known.subscription, health: { lastError: 'HTTP 500' } });
      expect((await request(open, '/')).text).toContain(LETTER_ERROR);
    });
  });
});
