import { connect } from 'node:net';
import type { Pool } from 'pg';
import { AckSpool } from '../src/receive/ack-spool';
import { createTestDatabase, TestDatabase } from './support/database';
import { parseMetrics } from './support/metrics';
import { deliver, postEvent } from './support/pozy-events';
import { RunningService, startService, waitFor } from './support/service';
import { TcpProxy } from './support/tcp-proxy';

const ADMIN_TOKEN = 'inputs-admin-token-5c1e';
const ADMIN = { authorization: `Bearer ${ADMIN_TOKEN}` };
const JSON_ADMIN = { ...ADMIN, 'content-type': 'application/json' };
const POST_ID = '66aa01f3c2b1e4d5f6a7b8c9';
const SUBSCRIPTION = { url: 'https://hooks.example.com/pozy', eventTypes: ['post.changed'] };
const ERROR_KEYS = ['details', 'error', 'message', 'statusCode'];

/** A cursor as the service writes them (base64url JSON), holding what a client edited into it. */
const cursorOf = (body: unknown) => Buffer.from(JSON.stringify(body)).toString('base64url');

describe('input PostgreSQL cannot take, dates, future events, ids, uniform errors', () => {
  let db: TestDatabase;
  let proxy: TcpProxy;
  let service: RunningService;
  /** The same service, on a database connection the proxy can cut. */
  let cut: RunningService;
  /** Straight to PostgreSQL, around the proxy: what is really stored. */
  let direct: Pool;
  const count = async (table: string) => (await direct.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`)).rows[0].n;
  const storedEvents = async (ids: string[]) => (await direct.query('SELECT id FROM pozy_event WHERE id = ANY($1)', [ids])).rowCount;
  const call = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${service.baseUrl}${path}`, {
      method,
      headers: body === undefined ? ADMIN : JSON_ADMIN,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, body: (text ? JSON.parse(text) : {}) as Record<string, unknown> };
  };

  beforeAll(async () => {
    db = await createTestDatabase('inputs');
    const url = new URL(db.url);
    proxy = await TcpProxy.start({ host: url.hostname, port: Number(url.port || 5432) });
    direct = db.pool(2);
    // api-only: nothing reads Pozy, so what a request stored stays as it left it.
    service = await startService(db.url, { ROLE: 'api', ADMIN_TOKEN });
    // The spool retries after 10 min: what was spooled stays there for the test to see.
    cut = await startService(proxy.url(db.url), { ROLE: 'api', ADMIN_TOKEN, ACK_TIMEOUT_MS: '500', SPOOL_RETRY_FIRST_MS: '600000' });
  });

  afterAll(async () => {
    await service?.close();
    await cut?.close();
    await proxy?.stop();
    await direct?.end();
    await db?.drop();
  });

  /** The database reachable again, and the cut service's pool reconnected (switching the proxy cut its connections). */
  const reconnect = async () => {
    proxy.set('pass');
    await waitFor('the cut service to reach the database', async () => {
      const response = await fetch(`${cut.baseUrl}/admin/dead-letters?queue=delivery`, { headers: ADMIN });
      return response.status === 200 ? true : undefined;
    });
  };

  describe('a NUL or an unpaired surrogate reaching SQL is a 400 naming the parameter, never a 500', () => {
    it.each([
      ['GET', '/posts/66aa%00b8c9', undefined, 'id'],
      ['GET', '/accounts/acc%00', undefined, 'id'],
      ['GET', '/posts?profileId=a%00b', undefined, 'profileId'],
      ['GET', '/posts?accountId=a%00b', undefined, 'accountId'],
      ['GET', '/posts?q=spring%00sale', undefined, 'q'],
      ['GET', '/posts?tag=launch,a%00b', undefined, 'tag'],
      ['GET', '/posts?hashtag=%00', undefined, 'hashtag'],
      ['GET', '/posts?visibility=public%00', undefined, 'visibility'],
      ['GET', '/posts?errorCategory=%00', undefined, 'errorCategory'],
      ['GET', '/posts?platform=x%00', undefined, 'platform'],
      ['GET', '/accounts?q=a%00b', undefined, 'q'],
      ['GET', '/accounts?profileId=a%00b', undefined, 'profileId'],
      ['GET', '/accounts?platform=a%00b', undefined, 'platform'],
      ['GET', '/changes?profileId=a%00b', undefined, 'profileId'],
      ['GET', '/changes?platform=a%00b', undefined, 'platform'],
      ['POST', '/admin/subscriptions', { ...SUBSCRIPTION, description: 'CRM\u0000sync' }, 'description'],
      ['POST', '/admin/subscriptions', { ...SUBSCRIPTION, description: 'CRM \ud800 sync' }, 'description'],
      ['POST', '/admin/subscriptions', { ...SUBSCRIPTION, profileIds: ['66a9ffee00112233445566aa', 'a\u0000b'] }, 'profileIds[1]'],
      ['POST', '/admin/subscriptions', { ...SUBSCRIPTION, url: 'https://hooks.example.com/a\u0000b' }, 'url'],
    ])('%s %s', async (method, path, body, field) => {
      const response = await call(method, path, body);

      expect(response.status).toBe(400);
      expect(response.body).toMatchObject({
        statusCode: 400,
        error: 'invalid_request',
        details: [{ field, problems: [expect.stringMatching(/NUL|surrogate/)] }],
      });
      expect(String(response.body.message)).toContain(field);
      expect(await count('subscription')).toBe(0);
    });

    it('PATCH of a subscription: a description with NUL is refused and the stored one is kept', async () => {
      const created = await call('POST', '/admin/subscriptions', { ...SUBSCRIPTION, description: 'before' });
      expect(created.status).toBe(201);
      const id = String(created.body.id);
      try {
        const patched = await call('PATCH', `/admin/subscriptions/${id}`, { description: 'after\u0000' });

        expect(patched).toMatchObject({ status: 400, body: { error: 'invalid_request', details: [{ field: 'description' }] } });
        expect((await direct.query('SELECT description FROM subscription WHERE id = $1', [id])).rows).toEqual([{ description: 'before' }]);
      } finally {
        await direct.query('DELETE FROM subscription');
      }
    });

    it.each([
      ['/posts', { after: 'a\u0000b' }],
      ['/posts?sort=scheduledFor:desc', { sort: 'scheduledFor:desc', after: '\ud800', value: null }],
      ['/accounts', { after: 'acc\u0000' }],
    ])('a cursor edited to carry such an id is an invalid cursor (%s)', async (path, cursor) => {
      const response = await call('GET', `${path}${path.includes('?') ? '&' : '?'}cursor=${cursorOf(cursor)}`);

      expect(response).toEqual({
        status: 400,
        body: { statusCode: 400, error: 'invalid_query', message: 'cursor is not one this service returned (use nextCursor as given)' },
      });
    });
  });

  describe('dates: only forms JavaScript and PostgreSQL read alike', () => {
    it.each([
      ['updatedSince', '2024-W01'],
      ['updatedSince', '2024-001'],
      ['updatedSince', '2024-01-01T24:00:00Z'],
      ['updatedSince', '2024'],
      ['scheduledFrom', '%2B002024-01-01'],
      ['scheduledTo', '-2024-01-01'],
      ['publishedFrom', '2024-02-30'],
      ['publishedTo', '2024-01-01T10:00:00%2B25:00'],
    ])('GET /posts?%s=%s is a 400 naming it', async (name, value) => {
      const response = await call('GET', `/posts?${name}=${value}`);

      expect(response.status).toBe(400);
      expect(response.body).toMatchObject({
        error: 'invalid_request',
        details: [{ field: name, problems: [expect.stringContaining(`${name} must be an ISO 8601`)] }],
      });
    });

    it.each([['2024-W01'], ['2024-001'], ['2024-01-01T24:00:00Z'], ['2024-01-01T10:00:00%2B25:00'], ['0000-12-31']])(
      'POST /admin/subscriptions/:id/replay?since=%s is a 400 naming since (a 500 before, for some)',
      async (since) => {
        const created = await call('POST', '/admin/subscriptions', SUBSCRIPTION);
        try {
          const response = await call('POST', `/admin/subscriptions/${String(created.body.id)}/replay?since=${since}&source=history&dryRun=true`);

          expect(response.status).toBe(400);
          expect(response.body).toMatchObject({ error: 'invalid_request', details: [{ field: 'since' }] });
        } finally {
          await direct.query('DELETE FROM subscription');
        }
      },
    );

    it('reads a date, a date-time with a zone, and one without (UTC), as docs/security.md says', async () => {
      const created = await call('POST', '/admin/subscriptions', SUBSCRIPTION);
      expect(created.status).toBe(201);
      try {
        for (const since of ['2026-11-29', '2026-11-29T10:15:30.5%2B02:00', '2026-11-29T10:15']) {
          const response = await call('POST', `/admin/subscriptions/${String(created.body.id)}/replay?since=${since}&source=history&dryRun=true`);
          expect(response).toMatchObject({ status: 202, body: { count: 0, dryRun: true } });
        }
        expect((await call('GET', '/posts?updatedSince=2026-11-29T00:00:00-05:00&scheduledFrom=2026-11-29')).status).toBe(200);
      } finally {
        await direct.query('DELETE FROM subscription');
      }
    });
  });

  describe('an event PostgreSQL would refuse: one answer, whatever the database', () => {
    const withNul = () => postEvent(POST_ID, 'post.published', { post: { id: POST_ID, content: 'sale\u0000' } });
    const withSurrogate = () => postEvent(POST_ID, 'post.published', { post: { id: POST_ID, ['title\ud800']: 'x' } });
    const withHugeNumber = () => postEvent(POST_ID);

    it.each([
      ['a NUL in post.content', withNul, (event: unknown) => JSON.stringify(event), /post\.content must not contain a NUL/],
      [
        'an unpaired surrogate in a key',
        withSurrogate,
        (event: unknown) => JSON.stringify(event),
        /post: post has a key that must not contain an unpaired UTF-16 surrogate/,
      ],
      [
        'a number jsonb cannot hold',
        withHugeNumber,
        (event: unknown) => JSON.stringify(event).replace('"platforms":[]', '"platforms":[],"score":1e131072'),
        /number PostgreSQL cannot store/,
      ],
    ])('%s: 400 with the database healthy, and 400 (not spooled) with it cut', async (_name, make, body, message) => {
      const healthy = make();
      const answer = await deliver(cut.baseUrl, healthy, { body: body(healthy) });
      expect(answer).toMatchObject({ status: 400, body: { statusCode: 400, error: 'invalid_event', message: expect.stringMatching(message) } });

      proxy.set('blackhole');
      const spool = cut.app.get(AckSpool);
      const before = spool.counts();
      const refusable = make();
      const good = postEvent(POST_ID);
      const [refused, spooled] = await Promise.all([deliver(cut.baseUrl, refusable, { body: body(refusable) }), deliver(cut.baseUrl, good)]);

      expect(refused).toMatchObject({ status: 400, body: { error: 'invalid_event', message: expect.stringMatching(message) } });
      // The database really was out of reach: a good event sent with it was spooled, and only that one.
      expect(spooled).toMatchObject({ status: 200, body: { spooled: true } });
      expect(spool.counts()).toEqual({ pending: before.pending + 1, dead: 0 });
      await reconnect();
      expect(await storedEvents([healthy.id, refusable.id])).toBe(0);
    });
  });

  describe('bodies that are not UTF-8: 400 invalid_encoding naming where, nothing stored', () => {
    /** A signed event whose post.content holds these bytes as they are, between two plain words. */
    const eventWith = (bytes: number[]) => {
      const event = postEvent(POST_ID, 'post.published', { post: { id: POST_ID, content: 'sale SPLIT here' } });
      const [before, after] = JSON.stringify(event).split('SPLIT');
      return { event, body: Buffer.concat([Buffer.from(before), Buffer.from(bytes), Buffer.from(after)]) };
    };

    it.each([
      ['a lone continuation byte', [0x80], /at byte \d+: a continuation byte \(0x80\) without a lead byte/],
      ['an overlong encoding of "/" (C0 AF)', [0xc0, 0xaf], /an overlong encoding \(lead byte 0xC0\)/],
      ['an overlong three-byte encoding (E0 80 AF)', [0xe0, 0x80, 0xaf], /an overlong encoding \(0xE0 0x80\)/],
      ['a surrogate code point encoded in UTF-8 (ED A0 80)', [0xed, 0xa0, 0x80], /a UTF-16 surrogate encoded as UTF-8 \(0xED 0xA0\)/],
      ['a truncated sequence (E2 82, then a space)', [0xe2, 0x82], /a 3-byte sequence cut short \(0x20 is not a continuation byte\)/],
      ['a code point past U+10FFFF (F4 90 80 80)', [0xf4, 0x90, 0x80, 0x80], /a code point past U\+10FFFF/],
      ['a byte UTF-8 never uses (FF)', [0xff], /a byte that never occurs in UTF-8 \(0xFF\)/],
    ])('signed, with %s', async (_name, bytes, problem) => {
      const { event, body } = eventWith(bytes);

      const answer = await deliver(service.baseUrl, event, { body });

      expect(answer).toMatchObject({
        status: 400,
        body: { statusCode: 400, error: 'invalid_encoding', details: [{ field: 'body', problems: [expect.stringMatching(problem)] }] },
      });
      expect(answer.body.message).toMatch(/^JSON must be UTF-8: the body is not valid UTF-8 at byte \d+: /);
      expect(await storedEvents([event.id])).toBe(0);
    });

    it('a body cut short inside a sequence, at its very end', async () => {
      const event = postEvent(POST_ID);
      const body = Buffer.concat([Buffer.from(JSON.stringify(event)), Buffer.from([0xf0, 0x9f, 0x98])]);

      const answer = await deliver(service.baseUrl, event, { body });

      expect(answer).toMatchObject({
        status: 400,
        body: { error: 'invalid_encoding', message: expect.stringMatching(/4-byte sequence cut short by the end/) },
      });
      expect(await storedEvents([event.id])).toBe(0);
    });

    it('a byte order mark before the JSON', async () => {
      const event = postEvent(POST_ID);
      const body = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(JSON.stringify(event))]);

      const answer = await deliver(service.baseUrl, event, { body });

      expect(answer).toMatchObject({ status: 400, body: { error: 'invalid_encoding', message: expect.stringMatching(/byte order mark/) } });
      expect(await storedEvents([event.id])).toBe(0);
    });

    it('the signature comes first: invalid UTF-8 signed with another secret is 401', async () => {
      const { event, body } = eventWith([0xed, 0xa0, 0x80]);

      const answer = await deliver(service.baseUrl, event, { body, secret: 'whsec_someone_else' });

      expect(answer).toMatchObject({ status: 401, body: { error: 'invalid_signature' } });
      expect(await storedEvents([event.id])).toBe(0);
    });

    it('valid multi-byte UTF-8 (2, 3 and 4 bytes, the last code point, U+FFFD itself) is stored as it was signed', async () => {
      const content = 'Frühling распродажа 春 😀 \u{10ffff} \ud7ff \ue000 \ufffd';
      const event = postEvent(POST_ID, 'post.published', { post: { id: POST_ID, content } });

      expect(await deliver(service.baseUrl, event, { body: Buffer.from(JSON.stringify(event), 'utf8') })).toMatchObject({ status: 200 });
      const { rows } = await direct.query<{ content: string }>("SELECT payload -> 'post' ->> 'content' AS content FROM pozy_event WHERE id = $1", [
        event.id,
      ]);
      expect(rows).toEqual([{ content }]);
    });

    it('every JSON body: an admin request that is not UTF-8 is refused too, and one that is keeps its text', async () => {
      const before = await count('subscription');
      const [head, tail] = JSON.stringify({ ...SUBSCRIPTION, description: 'cafSPLIT', active: false }).split('SPLIT');
      const bad = Buffer.concat([Buffer.from(head), Buffer.from([0xe9]), Buffer.from(tail)]); // Latin-1 é

      const refused = await fetch(`${service.baseUrl}/admin/subscriptions`, { method: 'POST', headers: JSON_ADMIN, body: bad });

      expect(refused.status).toBe(400);
      expect(await refused.json()).toMatchObject({
        statusCode: 400,
        error: 'invalid_encoding',
        details: [{ field: 'body', problems: [expect.stringMatching(/a 3-byte sequence cut short \(0x22 is not a continuation byte\)/)] }],
      });
      expect(await count('subscription')).toBe(before);

      const good = Buffer.from(JSON.stringify({ ...SUBSCRIPTION, description: 'café 春 😀', active: false }), 'utf8');
      const created = await fetch(`${service.baseUrl}/admin/subscriptions`, { method: 'POST', headers: JSON_ADMIN, body: good });
      expect(created.status).toBe(201);
      expect(await created.json()).toMatchObject({ description: 'café 春 😀' });
    });
  });

  describe('event timestamps in the future', () => {
    it('refuses one more than EVENT_MAX_FUTURE_MS (10 min) ahead with 400 naming timestamp, and stores nothing', async () => {
      const event = postEvent(POST_ID, 'post.published', { timestamp: new Date(Date.now() + 11 * 60_000).toISOString() });
      const far = postEvent(POST_ID, 'post.published', { timestamp: '9999-12-31T23:59:59.000Z' });

      for (const refused of [event, far]) {
        const answer = await deliver(service.baseUrl, refused);
        expect(answer).toMatchObject({
          status: 400,
          body: {
            error: 'invalid_event',
            details: [{ field: 'timestamp', problems: [expect.stringMatching(/ahead of this server's clock .*EVENT_MAX_FUTURE_MS/)] }],
          },
        });
      }
      expect(await storedEvents([event.id, far.id])).toBe(0);
    });

    it('accepts one within the tolerance (a clock a few minutes ahead)', async () => {
      const event = postEvent(POST_ID, 'post.published', { timestamp: new Date(Date.now() + 5 * 60_000).toISOString() });

      expect(await deliver(service.baseUrl, event)).toMatchObject({ status: 200, body: { duplicate: false } });
      expect(await storedEvents([event.id])).toBe(1);
    });
  });

  describe('event timestamps older than events are kept', () => {
    const DAY = 86_400_000;
    const rejectedInvalidEvents = async () => {
      const text = await (await fetch(`${service.baseUrl}/metrics`)).text();
      return parseMetrics(text).get('pozy_sync_webhooks_received_total{outcome="rejected",reason="invalid_event"}') ?? 0;
    };

    it('refuses a signed delivery dated 2020-01-01, or a day short of EVENT_RETENTION_DAYS (30) ago, with 400 naming timestamp; stores nothing', async () => {
      const captured = postEvent(POST_ID, 'post.published', { timestamp: '2020-01-01T00:00:00.000Z' });
      const justPast = postEvent(POST_ID, 'post.published', { timestamp: new Date(Date.now() - 29 * DAY - 60_000).toISOString() });
      const before = await rejectedInvalidEvents();

      for (const stale of [captured, justPast]) {
        const answer = await deliver(service.baseUrl, stale);
        expect(answer).toMatchObject({
          status: 400,
          body: {
            statusCode: 400,
            error: 'invalid_event',
            details: [
              {
                field: 'timestamp',
                problems: [
                  expect.stringMatching(/^timestamp is [\d.]+ days old: events older than EVENT_RETENTION_DAYS \(30\) less 1 day are refused/),
                ],
              },
            ],
          },
        });
      }
      expect(await storedEvents([captured.id, justPast.id])).toBe(0);
      // Counted as what they are: refusals, not accepted events.
      expect(await rejectedInvalidEvents()).toBe(before + 2);
    });

    it('accepts one inside the window (a delivery Pozy retried for a day and a half, and older still)', async () => {
      const retried = postEvent(POST_ID, 'post.published', { timestamp: new Date(Date.now() - 33 * 3_600_000).toISOString() });
      const old = postEvent(POST_ID, 'post.published', { timestamp: new Date(Date.now() - 28 * DAY).toISOString() });

      for (const event of [retried, old]) expect(await deliver(service.baseUrl, event)).toMatchObject({ status: 200, body: { duplicate: false } });
      expect(await storedEvents([retried.id, old.id])).toBe(2);
    });
  });

  describe("ids in another case: Pozy's are lower-case hex", () => {
    it.each([
      ['/admin/resync/posts/66AA01F3C2B1E4D5F6A7B8C9'],
      ['/admin/resync/posts/66aa01f3c2b1e4d5f6a7B8C9'],
      ['/admin/resync/profiles/66A9FFEE00112233445566AA/accounts'],
    ])('POST %s is a 400 naming id, and asks for no read', async (path) => {
      await direct.query('TRUNCATE reconcile_request');
      const response = await call('POST', path);

      expect(response).toMatchObject({
        status: 400,
        body: { error: 'invalid_request', details: [{ field: 'id', problems: ['id must be a Pozy id: 24 lower-case hexadecimal digits'] }] },
      });
      expect(await count('reconcile_request')).toBe(0);
    });

    it('a dead letter id is a UUID in either case (the ack queue used to miss it in upper case)', async () => {
      proxy.set('blackhole');
      const event = postEvent(POST_ID);
      expect((await deliver(cut.baseUrl, event)).body.spooled).toBe(true);
      await reconnect();
      // Straight to the dead-letter queue, as after a minute of timeouts (the spool's SQLite, which it keeps private).
      const spool: unknown = cut.app.get(AckSpool);
      const sqlite = (spool as { db: { prepare(sql: string): { get(...args: unknown[]): unknown } } }).db;
      const letter = sqlite
        .prepare(`UPDATE spooled SET state = 'dead', dead_at = ?, next_attempt_at = NULL WHERE event_id = ? RETURNING id`)
        .get(Date.now(), event.id) as { id: string };

      const replay = await fetch(`${cut.baseUrl}/admin/dead-letters/${letter.id.toUpperCase()}/replay`, { method: 'POST', headers: ADMIN });

      expect(replay.status).toBe(202);
      expect(await replay.json()).toEqual({ replayed: true, stored: 1 });
      expect(await storedEvents([event.id])).toBe(1);
    });
  });

  describe("Fastify's own refusals answer in the service's error shape", () => {
    /** Sends raw bytes and reads the whole answer (the server closes the connection). */
    const raw = (text: string) =>
      new Promise<{ status: number; body: Record<string, unknown> }>((resolve, reject) => {
        const socket = connect(Number(new URL(service.baseUrl).port), '127.0.0.1', () => socket.write(text));
        let answer = '';
        socket.on('data', (chunk) => (answer += chunk.toString()));
        socket.on('error', reject);
        socket.on('close', () => {
          const [head, body] = answer.split('\r\n\r\n');
          resolve({ status: Number(head.split(' ')[1]), body: JSON.parse(body) as Record<string, unknown> });
        });
      });

    it.each([
      ['a %-escape that does not decode', () => call('GET', '/posts/%zz'), 400, 'invalid_url'],
      ['an unpaired surrogate %-encoded in the path', () => call('GET', '/posts/%ED%A0%80'), 400, 'invalid_url'],
      ['a path parameter over 100 characters', () => call('GET', `/posts/${'a'.repeat(101)}`), 414, 'uri_too_long'],
      ['no route', () => call('GET', '/nowhere'), 404, 'not_found'],
      ['an unsupported method', () => call('PUT', '/posts'), 404, 'not_found'],
      [
        'headers over the size limit',
        () => raw(`GET /posts HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`),
        431,
        'request_header_fields_too_large',
      ],
      ['a request that is not HTTP', () => raw('HELLO\r\n\r\n'), 400, 'bad_request'],
    ])('%s', async (_name, send, status, error) => {
      const response = await send();

      expect(response.status).toBe(status);
      expect(response.body).toMatchObject({ statusCode: status, error, message: expect.any(String) });
      expect(Object.keys(response.body).every((key) => ERROR_KEYS.includes(key))).toBe(true);
    });
  });
});
