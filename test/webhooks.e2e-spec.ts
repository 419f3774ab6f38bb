import { accountEvent, deliver, postEvent } from './support/pozy-events';
import { queuedJobs, reconcileRequests } from './support/queue';
import { signPozyPayload } from '../src/webhooks/webhook-signature';
import { RunningService, TEST_WEBHOOK_SECRET, waitFor } from './support/service';
import { ServiceSpec, startSpec } from './support/spec';

describe('POST /webhooks/pozy (signed, real HTTP, real PostgreSQL)', () => {
  let spec: ServiceSpec;
  let service: RunningService;

  beforeAll(async () => {
    // An api-only replica: reconcile requests stay in the outbox (no worker takes them), so they can be counted.
    spec = await startSpec('webhooks', { env: { ROLE: 'api' } });
    service = spec.service;
  });

  afterAll(async () => {
    await spec?.close();
  });

  beforeEach(async () => {
    await service.pool.query('TRUNCATE pozy_event, reconcile_request');
    await service.pool.query('DELETE FROM graphile_worker._private_jobs');
  });

  const events = async () =>
    (
      await service.pool.query<{ id: string; type: string; test: boolean; resource_type: string | null; resource_id: string | null }>(
        'SELECT id, type, test, resource_type, resource_id FROM pozy_event ORDER BY received_at',
      )
    ).rows;
  /** What is waiting to be reconciled: outbox rows, plus any job already handed to graphile-worker. */
  const pending = async () => [
    ...(await reconcileRequests(service.pool)).map((r) => `${r.key} (${r.resource_type} ${r.resource_id})`),
    ...(await queuedJobs(service.pool)).map((j) => `job ${j.key}`),
  ];

  it('stores a new event once and requests one reconcile of its post', async () => {
    const event = postEvent('66aa01f3c2b1e4d5f6a7b8c9');
    const response = await deliver(service.baseUrl, event, { headers: { 'x-pozy-delivery-id': 'dlv_1', 'x-pozy-attempt': '3' } });

    expect(response).toEqual({
      status: 200,
      body: { received: true, workspaceId: 'default', eventId: event.id, duplicate: false, reconcile: 'post:66aa01f3c2b1e4d5f6a7b8c9' },
    });
    const { rows } = await service.pool.query(
      'SELECT id, type, payload, "timestamp", delivery_id, attempt, test, resource_type, resource_id, received_at FROM pozy_event',
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      id: event.id,
      type: 'post.published',
      payload: event,
      timestamp: new Date(event.timestamp),
      delivery_id: 'dlv_1',
      attempt: 3,
      test: false,
      resource_type: 'post',
      resource_id: '66aa01f3c2b1e4d5f6a7b8c9',
    });
    expect(rows[0].received_at).toBeInstanceOf(Date);
    expect(await pending()).toEqual(['post:66aa01f3c2b1e4d5f6a7b8c9 (post 66aa01f3c2b1e4d5f6a7b8c9)']);
  });

  it('answers a second delivery of the same event as a duplicate: one row, one request', async () => {
    const event = postEvent('post-dup');
    const first = await deliver(service.baseUrl, event);
    const [request] = await reconcileRequests(service.pool);
    const second = await deliver(service.baseUrl, event, { headers: { 'x-pozy-attempt': '2' } });

    expect(first.status).toBe(200);
    expect(first.body.duplicate).toBe(false);
    expect(second).toEqual({ status: 200, body: { received: true, workspaceId: 'default', eventId: event.id, duplicate: true, reconcile: null } });
    expect(await events()).toHaveLength(1);
    // The very same request row: the duplicate did not touch it.
    expect(await reconcileRequests(service.pool)).toEqual([request]);
    expect(await pending()).toEqual(['post:post-dup (post post-dup)']);
  });

  it('stores exactly one row and one request when the same event arrives 50 times at once', async () => {
    const event = postEvent('post-storm');
    const responses = await Promise.all(Array.from({ length: 50 }, () => deliver(service.baseUrl, event)));

    expect(responses.map((r) => r.status)).toEqual(Array(50).fill(200));
    expect(responses.filter((r) => r.body.duplicate === false)).toHaveLength(1);
    expect(responses.filter((r) => r.body.duplicate === true)).toHaveLength(49);
    expect(await events()).toHaveLength(1);
    expect(await pending()).toEqual(['post:post-storm (post post-storm)']);
    // Every copy counted, those in one statement's batch and those after it alike (the post's timeline shows them).
    expect((await service.pool.query('SELECT copies FROM pozy_event WHERE id = $1', [event.id])).rows).toEqual([{ copies: 50 }]);
  });

  it('stores every event once when hundreds of deliveries, each sent twice, arrive together', async () => {
    const burst = Array.from({ length: 200 }, (_, i) => postEvent(`post-many-${i % 40}`));
    const responses = await Promise.all([...burst, ...burst].map((event) => deliver(service.baseUrl, event)));

    expect(responses.every((r) => r.status === 200)).toBe(true);
    // Exactly one delivery of each event was the one that stored it.
    const storedBy = new Map<unknown, number>();
    for (const r of responses) if (r.body.duplicate === false) storedBy.set(r.body.eventId, (storedBy.get(r.body.eventId) ?? 0) + 1);
    expect(storedBy.size).toBe(200);
    expect([...storedBy.values()].every((n) => n === 1)).toBe(true);
    expect((await events()).map((e) => e.id).sort()).toEqual(burst.map((e) => e.id).sort());
    expect(await reconcileRequests(service.pool)).toHaveLength(40);
  });

  // The receiver refuses it before it joins a batch; the batch's own event-by-event retry, for a refusal only the
  // database finds, is src/receive/event-ingester.spec.ts's.
  it('refuses an event PostgreSQL cannot store without failing the deliveries that arrived with it', async () => {
    const good = Array.from({ length: 30 }, (_, i) => postEvent(`post-neighbour-${i}`));
    const bad = { ...postEvent('post-nul'), note: 'nul \u0000 inside' };
    const body = JSON.stringify(bad).replace('\\\\u0000', '\\u0000');

    const [badAnswer, ...goodAnswers] = await Promise.all([
      deliver(service.baseUrl, bad, { body }),
      ...good.map((event) => deliver(service.baseUrl, event)),
    ]);

    expect(badAnswer.status).toBe(400);
    expect(badAnswer.body).toMatchObject({ error: 'invalid_event', message: 'Invalid event: note: note must not contain a NUL character (U+0000)' });
    expect(goodAnswers.map((a) => a.status)).toEqual(Array(30).fill(200));
    expect((await events()).map((e) => e.id).sort()).toEqual(good.map((e) => e.id).sort());
  });

  it("asks for another read when an event commits while its resource's read is being dispatched", async () => {
    await deliver(service.baseUrl, postEvent('post-race'));
    // Take the pending read the way the dispatcher does, and hold the transaction open.
    const dispatcher = await service.pool.connect();
    try {
      await dispatcher.query('BEGIN');
      await dispatcher.query("UPDATE reconcile_request SET due_at = NULL, dispatched_at = now() WHERE key = 'post:post-race'");
      const late = deliver(service.baseUrl, postEvent('post-race', 'post.published'));
      // The late event's statement waits on the row the dispatch holds...
      await waitFor('the late event to wait on the dispatch', async () => {
        const { rows } = await service.pool.query(
          "SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%reconcile_request%'",
        );
        return rows.length > 0 ? true : undefined;
      });
      await dispatcher.query('COMMIT');

      // ...then sees the read taken and asks for one more, one coalescing window after it.
      expect((await late).body).toMatchObject({ duplicate: false, reconcile: 'post:post-race' });
      const { rows } = await service.pool.query<{ due: Date; dispatched: Date }>(
        "SELECT due_at AS due, dispatched_at AS dispatched FROM reconcile_request WHERE key = 'post:post-race'",
      );
      expect(rows[0].due.getTime() - rows[0].dispatched.getTime()).toBe(1000);
    } finally {
      dispatcher.release();
    }
  });

  it('keeps one pending request per post while distinct events for it are all stored', async () => {
    const results = [];
    for (const type of ['post.scheduled', 'post.platform.published', 'post.published']) {
      results.push(await deliver(service.baseUrl, postEvent('post-burst', type)));
    }

    expect(results.map((r) => r.body.duplicate)).toEqual([false, false, false]);
    expect(results.map((r) => r.body.reconcile)).toEqual(['post:post-burst', 'post:post-burst', 'post:post-burst']);
    expect(await events()).toHaveLength(3);
    expect(await pending()).toEqual(['post:post-burst (post post-burst)']);
  });

  it('keys account events by profile, since accounts are read per profile', async () => {
    const response = await deliver(service.baseUrl, accountEvent('acc-1', 'profile-9'));

    expect(response.body.reconcile).toBe('profile:profile-9');
    expect((await events())[0]).toMatchObject({ resource_type: 'profile', resource_id: 'profile-9' });
    expect(await pending()).toEqual(['profile:profile-9 (profile profile-9)']);
  });

  it('stores and flags a test event, and requests nothing', async () => {
    const test = { id: 'test-evt-1', event: 'webhook.test', message: 'Test webhook', test: true, timestamp: new Date().toISOString() };
    // A test event that looks like a real post event must not touch the mirror either.
    const testPost = postEvent('post-from-test', 'post.published', { test: true });

    const answers = [await deliver(service.baseUrl, test), await deliver(service.baseUrl, testPost)];

    expect(answers.map((a) => [a.status, a.body.duplicate, a.body.reconcile])).toEqual([
      [200, false, null],
      [200, false, null],
    ]);
    expect((await events()).map((e) => [e.id, e.test, e.resource_type])).toEqual([
      ['test-evt-1', true, null],
      [testPost.id, true, null],
    ]);
    expect(await pending()).toEqual([]);
  });

  it('stores an unknown event type for later and requests nothing', async () => {
    const unknown = { id: 'unknown-1', event: 'comment.received', timestamp: new Date().toISOString(), comment: { id: 'c1' } };

    const response = await deliver(service.baseUrl, unknown);

    expect(response).toEqual({
      status: 200,
      body: { received: true, workspaceId: 'default', eventId: 'unknown-1', duplicate: false, reconcile: null },
    });
    expect(await events()).toEqual([{ id: 'unknown-1', type: 'comment.received', test: false, resource_type: null, resource_id: null }]);
    expect(await pending()).toEqual([]);
  });

  describe("a workspace's own path, /webhooks/pozy/:workspace", () => {
    it('is the same path as /webhooks/pozy for the default workspace: one event, deduplicated across both', async () => {
      const event = postEvent('66aa01f3c2b1e4d5f6a7b8d0');
      const first = await deliver(service.baseUrl, event, { path: '/webhooks/pozy/default' });
      const again = await deliver(service.baseUrl, event);

      expect(first).toEqual({
        status: 200,
        body: { received: true, workspaceId: 'default', eventId: event.id, duplicate: false, reconcile: 'post:66aa01f3c2b1e4d5f6a7b8d0' },
      });
      expect(again.body).toMatchObject({ workspaceId: 'default', duplicate: true });
      expect((await events()).map((e) => e.id)).toEqual([event.id]);
      const stored = await service.pool.query<{ workspace_id: string }>('SELECT workspace_id FROM pozy_event');
      expect(stored.rows).toEqual([{ workspace_id: 'default' }]);
    });

    it('checks the signature there as on /webhooks/pozy', async () => {
      const wrong = await deliver(service.baseUrl, postEvent('post-bad'), { path: '/webhooks/pozy/default', secret: 'not-the-secret' });

      expect(wrong).toMatchObject({ status: 401, body: { error: 'invalid_signature' } });
      expect(await events()).toEqual([]);
    });

    it.each([
      ['a workspace this deployment does not mirror', '/webhooks/pozy/acme'],
      ['an id that is no workspace slug', '/webhooks/pozy/Not_A-Slug'],
    ])('answers 404 unknown_workspace for %s, even signed with the secret, and stores nothing', async (_what, path) => {
      const response = await deliver(service.baseUrl, postEvent('post-elsewhere'), { path });

      expect(response.status).toBe(404);
      expect(response.body).toMatchObject({ error: 'unknown_workspace', message: expect.stringMatching(/No workspace/) });
      expect(await events()).toEqual([]);
      expect(await pending()).toEqual([]);
    });

    it('refuses malformed and oversized bodies there as on /webhooks/pozy', async () => {
      const malformed = await deliver(service.baseUrl, postEvent('post-bad'), { path: '/webhooks/pozy/default', body: '{"id":' });
      const oversized = await deliver(service.baseUrl, postEvent('post-bad'), {
        path: '/webhooks/pozy/default',
        body: JSON.stringify({ ...postEvent('post-bad'), padding: 'x'.repeat(1_100_000) }),
      });

      expect(malformed).toMatchObject({ status: 400, body: { error: 'malformed_json' } });
      expect(oversized).toMatchObject({ status: 413, body: { error: 'payload_too_large' } });
      expect(await events()).toEqual([]);
    });
  });

  describe('rejects bad deliveries with a 4xx naming the problem, storing nothing', () => {
    const valid = () => postEvent('post-bad');

    const cases: Array<[string, () => Promise<{ status: number; body: Record<string, unknown> }>, number, string, RegExp]> = [
      ['a wrong signature', () => deliver(service.baseUrl, valid(), { secret: 'not-the-secret' }), 401, 'invalid_signature', /X-Pozy-Signature/],
      [
        'a signature that is not hex',
        () => deliver(service.baseUrl, valid(), { headers: { 'x-pozy-signature': 'sha256=abc' } }),
        401,
        'invalid_signature',
        /X-Pozy-Signature/,
      ],
      ['a missing signature', () => deliver(service.baseUrl, valid(), { secret: null }), 401, 'missing_signature', /X-Pozy-Signature/],
      [
        'a body changed after signing',
        () => {
          const event = valid();
          const signature = signPozyPayload(TEST_WEBHOOK_SECRET, JSON.stringify(event));
          return deliver(service.baseUrl, event, {
            body: JSON.stringify({ ...event, post: { id: 'someone-else' } }),
            headers: { 'x-pozy-signature': signature },
          });
        },
        401,
        'invalid_signature',
        /does not match/,
      ],
      ['malformed JSON', () => deliver(service.baseUrl, valid(), { body: '{"id": "x", "event":' }), 400, 'malformed_json', /not valid JSON/],
      ['a JSON array', () => deliver(service.baseUrl, valid(), { body: '[1,2]' }), 400, 'invalid_event', /JSON object/],
      ['an empty body', () => deliver(service.baseUrl, valid(), { body: '' }), 400, 'malformed_json', /not valid JSON/],
      [
        'X-Pozy-Event-Id different from the body id',
        () => deliver(service.baseUrl, valid(), { headers: { 'x-pozy-event-id': 'another-id' } }),
        400,
        'event_id_mismatch',
        /X-Pozy-Event-Id header \(another-id\) does not equal/,
      ],
      [
        'no X-Pozy-Event-Id header',
        () => deliver(service.baseUrl, valid(), { headers: { 'x-pozy-event-id': undefined } }),
        400,
        'invalid_headers',
        /X-Pozy-Event-Id header is required/,
      ],
      [
        'a non-numeric X-Pozy-Attempt',
        () => deliver(service.baseUrl, valid(), { headers: { 'x-pozy-attempt': 'first' } }),
        400,
        'invalid_headers',
        /X-Pozy-Attempt/,
      ],
      [
        'no id in the body',
        () => {
          const { id: _id, ...rest } = valid();
          return deliver(service.baseUrl, null, { body: JSON.stringify(rest), headers: { 'x-pozy-event-id': 'x' } });
        },
        400,
        'invalid_event',
        /\bid\b/,
      ],
      [
        'no event type',
        () => {
          const event = valid();
          delete (event as Record<string, unknown>).event;
          return deliver(service.baseUrl, event);
        },
        400,
        'invalid_event',
        /event/,
      ],
      [
        'a timestamp that is not a date-time',
        () => deliver(service.baseUrl, { ...valid(), timestamp: '2026-03-02' }),
        400,
        'invalid_event',
        /timestamp/,
      ],
      [
        'a post event without post.id',
        () => deliver(service.baseUrl, { ...valid(), post: { status: 'published' } }),
        400,
        'invalid_event',
        /post\.id/,
      ],
      [
        'an account event without account.profileId',
        () => {
          const event = accountEvent('acc-1', 'profile-1');
          delete (event.account as Record<string, unknown>).profileId;
          return deliver(service.baseUrl, event);
        },
        400,
        'invalid_event',
        /account\.profileId/,
      ],
      [
        'a string PostgreSQL cannot store (a lone UTF-16 surrogate)',
        () => {
          const event = valid();
          return deliver(service.baseUrl, event, { body: JSON.stringify({ ...event, note: 'LONE' }).replace('LONE', '\\ud800') });
        },
        400,
        'invalid_event',
        /note: note must not contain an unpaired UTF-16 surrogate/,
      ],
      ['a body over 1 MiB', () => deliver(service.baseUrl, { ...valid(), padding: 'x'.repeat(1024 * 1024) }), 413, 'payload_too_large', /too large/i],
      [
        'a body that is not JSON',
        () => deliver(service.baseUrl, valid(), { headers: { 'content-type': 'text/plain' } }),
        415,
        'unsupported_media_type',
        /Unsupported Media Type/,
      ],
    ];

    it.each(cases)('%s', async (_name, send, status, error, message) => {
      const response = await send();

      expect(response.status).toBe(status);
      expect(response.body).toMatchObject({ statusCode: status, error });
      expect(String(response.body.message)).toMatch(message);
      expect(await events()).toEqual([]);
      expect(await pending()).toEqual([]);
    });
  });
});

describe('POST /webhooks/pozy without POZY_WEBHOOK_SECRET', () => {
  let spec: ServiceSpec;
  let service: RunningService;

  beforeAll(async () => {
    spec = await startSpec('webhooks_unsigned', { env: { POZY_WEBHOOK_SECRET: undefined } });
    service = spec.service;
  });

  afterAll(async () => {
    await spec?.close();
  });

  it('accepts an unsigned delivery (the service warned at boot)', async () => {
    const event = postEvent('post-unsigned');

    const response = await deliver(service.baseUrl, event, { secret: null });

    expect(response.status).toBe(200);
    expect(response.body.duplicate).toBe(false);
    const { rows } = await service.pool.query('SELECT id FROM pozy_event');
    expect(rows).toEqual([{ id: event.id }]);
  });
});
