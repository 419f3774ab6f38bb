import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import type { Pool } from 'pg';
import { AckSpool } from '../src/receive/ack-spool';
import { signPozyPayload } from '../src/webhooks/webhook-signature';
import { createTestDatabase, TestDatabase } from './support/database';
import { RunningService, startService, TEST_WEBHOOK_SECRET } from './support/service';

const ADMIN_TOKEN = 'property-admin-token-77a1';
const ADMIN = { authorization: `Bearer ${ADMIN_TOKEN}` };
const POST_ID = '66aa01f3c2b1e4d5f6a7b8c9';

/** What a client can put in a string that a careless server trips on, one character (or escape) at a time. */
const NASTY = [
  '\u0000',
  '\ud800',
  '\udbff',
  '\udc00',
  '\udfff',
  '\ud83d\ude00',
  '\u202e',
  '\u200b',
  '\ufeff',
  '\uffff',
  '\ufffe',
  '\u0085',
  '\u2028',
  '\u0301',
  '\u007f',
  '\n',
  '\t',
  'é',
  'ﬃ',
  '%',
  '%00',
  '%zz',
  '&',
  '=',
  '#',
  '?',
  '/',
  '\\',
  '"',
  "'",
  ' ',
  '+',
  ',',
  '..',
  ':',
  '*',
];
/** Values that pass some validators, so that the property reaches the handlers and SQL too. */
const PLAUSIBLE = [
  POST_ID,
  '66AA01F3C2B1E4D5F6A7B8C9',
  '0b7f8a52-4a0c-4c1e-9a59-3f1f2b7a6c11',
  '0B7F8A52-4A0C-4C1E-9A59-3F1F2B7A6C11',
  `msg_${'ab'.repeat(16)}`,
  '2026-11-29T10:15:30Z',
  '2026-11-29',
  '2024-W01',
  '2024-001',
  '2024-01-01T24:00:00Z',
  '+002024-01-01',
  '0000-01-01',
  'true',
  'false',
  '0',
  '1',
  '-1',
  '99999999999999999999',
  'post.changed',
  'instagram',
  'id:desc',
  'https://hooks.example.com/x',
  'http://[::1]:1/x',
  'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  'eyJhZnRlciI6ImEifQ',
  '',
];

/** What PostgreSQL refuses outright, drawn more often than the rest. */
const UNSTORABLE = fc.constantFrom('\u0000', '\ud800', '\udfff');

const unit = fc.oneof(
  UNSTORABLE,
  fc.constantFrom(...NASTY),
  fc.integer({ min: 0, max: 0xffff }).map((code) => String.fromCharCode(code)),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
  fc.constantFrom('a', 'f', '0', '9', '-'),
);

/** Generated strings: short odd ones, plausible ones with an odd character slipped in or as they are, and huge ones. */
const strings = (huge: number) =>
  fc.oneof(
    { weight: 6, arbitrary: fc.string({ unit, maxLength: 30 }) },
    {
      weight: 3,
      arbitrary: fc
        .tuple(fc.constantFrom(...PLAUSIBLE), fc.oneof(UNSTORABLE, fc.constantFrom(...NASTY)), fc.nat())
        .map(([value, odd, at]) => value.slice(0, at % (value.length + 1)) + odd + value.slice(at % (value.length + 1))),
    },
    { weight: 2, arbitrary: fc.constantFrom(...PLAUSIBLE) },
    {
      weight: 1,
      arbitrary: fc
        .tuple(fc.constantFrom('a', 'é', '\u0000', '\ud83d\ude00', '\ud800'), fc.integer({ min: 200, max: huge }))
        .map(([c, n]) => c.repeat(n)),
    },
  );

/** UTF-8 bytes of a code point, surrogates included (WTF-8): how a client sends an unpaired one in a URL. */
function bytesOf(cp: number): number[] {
  if (cp < 0x80) return [cp];
  if (cp < 0x800) return [0xc0 | (cp >> 6), 0x80 | (cp & 0x3f)];
  if (cp < 0x10000) return [0xe0 | (cp >> 12), 0x80 | ((cp >> 6) & 0x3f), 0x80 | (cp & 0x3f)];
  return [0xf0 | (cp >> 18), 0x80 | ((cp >> 12) & 0x3f), 0x80 | ((cp >> 6) & 0x3f), 0x80 | (cp & 0x3f)];
}

/** Percent-encodes every character but the unreserved ones (encodeURIComponent throws on an unpaired surrogate). */
function encode(text: string): string {
  let out = '';
  for (const char of text) {
    if (/^[A-Za-z0-9._~-]$/.test(char)) out += char;
    else
      out += bytesOf(char.codePointAt(0)!)
        .map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`)
        .join('');
  }
  return out;
}

interface Call {
  method: string;
  path: string;
  body?: string;
  headers?: Record<string, string>;
}

const json = (value: unknown): Pick<Call, 'body' | 'headers'> => ({ body: JSON.stringify(value), headers: { 'content-type': 'application/json' } });

describe('property: generated strings in every parameter never answer 5xx, and a 4xx stores nothing', () => {
  let db: TestDatabase;
  let service: RunningService;
  let direct: Pool;
  let subscriptionId: string;

  /** Every table a request could write, and the spool: compared around each refused request. */
  const snapshot = async () => {
    const { rows } = await direct.query(`SELECT
      (SELECT count(*) FROM subscription)::int AS subscriptions,
      (SELECT count(*) FROM pozy_event)::int AS events,
      (SELECT count(*) FROM reconcile_request)::int AS requests,
      (SELECT count(*) FROM notification)::int AS notifications,
      (SELECT count(*) FROM dead_letter)::int AS dead_letters,
      (SELECT count(*) FROM backfill_run)::int AS backfill_runs,
      (SELECT count(*) FROM sweep_run)::int AS sweep_runs,
      (SELECT coalesce(string_agg(row(id, url, secret, description, event_types, profile_ids, platforms, active, deleted_at)::text, ',' ORDER BY id), '')
         FROM subscription) AS subscription_fields`);
    return { ...(rows[0] as Record<string, unknown>), spool: service.app.get(AckSpool).counts() };
  };

  /** The property itself: sends the call, then checks the answer's status and shape, and what is stored. */
  const check = async (call: Call) => {
    const before = await snapshot();
    const response = await fetch(`${service.baseUrl}${call.path}`, {
      method: call.method,
      headers: { ...ADMIN, ...call.headers },
      body: call.body,
    });
    const text = await response.text();
    const where = `${call.method} ${call.path.slice(0, 200)} ${call.body?.slice(0, 200) ?? ''} answered ${response.status} ${text.slice(0, 300)}`;
    if (response.status >= 500) throw new Error(`a 5xx: ${where}`);
    if (response.status >= 400) {
      const body = JSON.parse(text) as Record<string, unknown>;
      if (body.statusCode !== response.status || typeof body.error !== 'string' || typeof body.message !== 'string') {
        throw new Error(`not the service's error shape: ${where}`);
      }
      expect({ where, stored: await snapshot() }).toEqual({ where, stored: before });
    }
  };

  beforeAll(async () => {
    db = await createTestDatabase('input_property');
    direct = db.pool(2);
    // api-only: no worker reads Pozy or moves rows, so every change to the tables is the request's own.
    service = await startService(db.url, { ROLE: 'api', ADMIN_TOKEN, POZY_API_URL: 'http://127.0.0.1:9' });
    const created = await fetch(`${service.baseUrl}/admin/subscriptions`, {
      method: 'POST',
      headers: { ...ADMIN, 'content-type': 'application/json' },
      body: JSON.stringify({ url: 'https://hooks.example.com/pozy', eventTypes: ['post.changed'] }),
    });
    subscriptionId = ((await created.json()) as { id: string }).id;
  });

  afterAll(async () => {
    await service?.close();
    await direct?.end();
    await db?.drop();
  });

  // `wait` (GET /changes) is left out: a generated number of seconds would hold the run that long.
  const QUERIES: Array<[string, string[], string]> = [
    [
      '/posts',
      [
        'status',
        'platform',
        'accountId',
        'profileId',
        'updatedSince',
        'includeDeleted',
        'q',
        'tag',
        'hashtag',
        'visibility',
        'errorCategory',
        'hasMedia',
        'scheduledFrom',
        'scheduledTo',
        'publishedFrom',
        'publishedTo',
        'sort',
        'fields',
        'consistency',
        'cursor',
        'limit',
      ],
      '',
    ],
    [`/posts/${POST_ID}`, ['fields', 'consistency'], ''],
    ['/accounts', ['profileId', 'platform', 'connected', 'includeRemoved', 'q', 'enabled', 'fields', 'cursor', 'limit', 'consistency'], ''],
    ['/accounts/66a9ffee00112233445566bb', ['fields', 'consistency'], ''],
    ['/changes', ['after', 'limit', 'types', 'profileId', 'platform', 'consistency'], ''],
    ['/changes/head', ['consistency'], ''],
    ['/admin/notifications', ['subscriptionId', 'state', 'limit'], ''],
    ['/admin/dead-letters', ['queue', 'limit'], 'queue=delivery'],
    ['POST /admin/dead-letters/replay', ['queue', 'dryRun'], 'queue=delivery&dryRun=true'],
    ['POST /admin/subscriptions/:sub/replay', ['since', 'source', 'dryRun'], 'since=2026-01-01&source=history&dryRun=true'],
  ];
  const queryCall = fc
    .tuple(
      fc.constantFrom(...QUERIES.flatMap(([endpoint, names, base]) => [...names, null].map((name) => ({ endpoint, name, base })))),
      strings(1_000),
    )
    .map(([{ endpoint, name, base }, value]): Call => {
      const [method, path] = endpoint.startsWith('POST ') ? ['POST', endpoint.slice(5)] : ['GET', endpoint];
      const rest = new URLSearchParams(base);
      // null: the generated string is the name of an unknown parameter.
      if (name !== null) rest.delete(name);
      const own = name === null ? `${encode(value)}=1` : `${name}=${encode(value)}`;
      const query = [own, rest.toString()].filter(Boolean).join('&');
      return { method, path: `${path.replace(':sub', subscriptionId)}?${query}` };
    });

  const PATHS: Array<[string, string, Pick<Call, 'body' | 'headers'>?]> = [
    ['GET', '/posts/:v'],
    ['GET', '/accounts/:v'],
    ['POST', '/admin/resync/posts/:v'],
    ['POST', '/admin/resync/profiles/:v/accounts'],
    ['GET', '/admin/subscriptions/:v'],
    ['PATCH', '/admin/subscriptions/:v', json({ description: 'patched' })],
    ['DELETE', '/admin/subscriptions/:v'],
    ['POST', '/admin/subscriptions/:v/resume'],
    ['POST', '/admin/subscriptions/:v/replay?since=2026-01-01&source=history&dryRun=true'],
    ['GET', '/admin/notifications/:v'],
    ['POST', '/admin/notifications/:v/replay'],
    ['POST', '/admin/dead-letters/:v/replay'],
    ['GET', '/admin/backfill/:v'],
    ['GET', '/admin/sweep/:v'],
  ];
  const pathCall = fc
    .tuple(fc.constantFrom(...PATHS), strings(1_000))
    .map(([[method, path, body], value]): Call => ({ method, path: path.replace(':v', encode(value)), ...body }));

  const SUBSCRIPTION = { url: 'https://hooks.example.com/pozy', eventTypes: ['post.changed'] };
  const FIELDS: Array<[string, (v: string) => Record<string, unknown>]> = [
    ['url', (v) => ({ url: v })],
    ['description', (v) => ({ description: v })],
    ['secret', (v) => ({ secret: v })],
    ['eventTypes', (v) => ({ eventTypes: [v] })],
    ['profileIds', (v) => ({ profileIds: ['66a9ffee00112233445566aa', v] })],
    ['platforms', (v) => ({ platforms: [v] })],
    ['active', (v) => ({ active: v })],
    ['a key', (v) => ({ [v]: 'x' })],
    ['a nested key', (v) => ({ description: { [v]: [v] } })],
  ];
  const bodyCall = fc
    .tuple(fc.constantFrom(...FIELDS), fc.boolean(), strings(20_000))
    .map(([[, field], create, value]): Call =>
      create
        ? { method: 'POST', path: '/admin/subscriptions', ...json({ ...SUBSCRIPTION, ...field(value) }) }
        : { method: 'PATCH', path: `/admin/subscriptions/${subscriptionId}`, ...json(field(value)) },
    );

  const EVENT_FIELDS: Array<(event: Record<string, unknown>, v: string) => void> = [
    (e, v) => (e.post = { id: v }),
    (e, v) => (e.post = { id: POST_ID, content: v }),
    (e, v) => (e.post = { id: POST_ID, [v]: { [v]: [v, 1.5e300] } }),
    (e, v) => (e.id = v),
    (e, v) => (e.event = v),
    (e, v) => (e.timestamp = v),
    (e, v) => Object.assign(e, { event: 'account.connected', post: undefined, account: { accountId: 'acc-1', profileId: v } }),
  ];
  const eventCall = fc.tuple(fc.constantFrom(...EVENT_FIELDS), strings(20_000)).map(([mutate, value]): Call => {
    const id = randomUUID();
    const event: Record<string, unknown> = { id, event: 'post.published', timestamp: new Date().toISOString(), post: { id: POST_ID } };
    mutate(event, value);
    const body = JSON.stringify(event);
    // Headers carry only what a header can: the id generated here (a generated body id then mismatches: 400).
    return {
      method: 'POST',
      path: '/webhooks/pozy',
      body,
      headers: { 'content-type': 'application/json', 'x-pozy-event-id': id, 'x-pozy-signature': signPozyPayload(TEST_WEBHOOK_SECRET, body) },
    };
  });

  it.each([
    ['every query parameter (and unknown names)', queryCall, 150],
    ['every path id', pathCall, 100],
    ['every admin body field (subscriptions, create and update)', bodyCall, 100],
    ['every field of a webhook event', eventCall, 100],
  ])('%s', async (_name, calls, numRuns) => {
    await fc.assert(fc.asyncProperty(calls, check), { numRuns });
  });
});
