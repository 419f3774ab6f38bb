import { randomBytes, randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import type { Account, Post } from '../simulator/world/pozy-shapes';
import { createTestDatabase, TestDatabase } from './support/database';
import { Harness, HARNESS_ADMIN_TOKEN, settled, startHarness } from './support/harness';
import { parseMetrics } from './support/metrics';
import { deliver, postEvent } from './support/pozy-events';
import { BUILT_REENCRYPT, spawnService } from './support/process';
import { RunningService, startService, waitFor } from './support/service';
import { Received, TestSubscriber, verifies } from './support/subscriber';

const ADMIN = { authorization: `Bearer ${HARNESS_ADMIN_TOKEN}` };
const JSON_ADMIN = { ...ADMIN, 'content-type': 'application/json' };
const key = (id: string) => `${id}:${randomBytes(32).toString('base64')}`;

interface SubscriptionBody {
  id: string;
  secret?: string;
  previousSecretUntil: string | null;
}

interface StoredSecrets {
  secret: string | null;
  previous_secret: string | null;
  previous_secret_until: Date | null;
}

describe('POZY_WEBHOOK_SECRET with two secrets: a rotation in Pozy', () => {
  const [previous, next] = ['whsec_pozy_before_rotation', 'whsec_pozy_after_rotation'];
  let db: TestDatabase;
  let service: RunningService;

  beforeAll(async () => {
    db = await createTestDatabase('inbound_rotation');
    // An api-only replica: the events are stored and never read from Pozy.
    service = await startService(db.url, { ROLE: 'api', POZY_WEBHOOK_SECRET: `${previous},${next}` });
  });

  afterAll(async () => {
    await service?.close();
    await db?.drop();
  });

  const metrics = async () => parseMetrics(await (await fetch(`${service.baseUrl}/metrics`)).text());

  it('accepts deliveries signed with either secret, refuses a third, and counts which secret matched', async () => {
    const before = await metrics();
    expect(before.get('pozy_sync_webhook_signature_matches_total{secret="first"}')).toBe(0);
    expect(before.get('pozy_sync_webhook_signature_matches_total{secret="second"}')).toBe(0);

    const [old, renewed, forged] = [
      postEvent('66aa01f3c2b1e4d5f6a7b801'),
      postEvent('66aa01f3c2b1e4d5f6a7b802'),
      postEvent('66aa01f3c2b1e4d5f6a7b803'),
    ];
    const oldAnswer = await deliver(service.baseUrl, old, { secret: previous });
    expect(oldAnswer).toMatchObject({ status: 200, body: { received: true, eventId: old.id, duplicate: false } });
    const renewedAnswer = await deliver(service.baseUrl, renewed, { secret: next });
    expect(renewedAnswer).toMatchObject({ status: 200, body: { received: true, eventId: renewed.id, duplicate: false } });
    const forgedAnswer = await deliver(service.baseUrl, forged, { secret: 'whsec_neither_of_them' });
    expect(forgedAnswer).toMatchObject({ status: 401, body: { error: 'invalid_signature' } });
    // Pozy has moved to the new secret: only it matches from now on.
    for (let i = 0; i < 2; i++) expect((await deliver(service.baseUrl, postEvent(`66aa01f3c2b1e4d5f6a7b81${i}`), { secret: next })).status).toBe(200);

    const { rows } = await service.pool.query<{ id: string }>('SELECT id FROM pozy_event WHERE id = ANY($1) ORDER BY id', [
      [old.id, renewed.id, forged.id],
    ]);
    expect(rows.map((r) => r.id).sort()).toEqual([old.id, renewed.id].sort());
    const after = await metrics();
    expect(after.get('pozy_sync_webhook_signature_matches_total{secret="first"}')).toBe(1);
    expect(after.get('pozy_sync_webhook_signature_matches_total{secret="second"}')).toBe(3);
    expect(after.get('pozy_sync_webhooks_received_total{outcome="rejected",reason="invalid_signature"}')).toBe(1);
    // No secret material in the series.
    const text = await (await fetch(`${service.baseUrl}/metrics`)).text();
    for (const secret of [previous, next]) expect(text).not.toContain(secret);
  });
});

describe('subscription secrets: rotation, encryption at rest, re-encryption to a new key', () => {
  const [KEY_A, KEY_B] = [key('a'), key('b')];
  let db: TestDatabase;
  let harness: Harness;
  const subscribers: TestSubscriber[] = [];
  const world = () => harness.sim.world;
  const api = (path: string, init: RequestInit = {}) => fetch(`${harness.service.baseUrl}${path}`, init);
  /** Every subscription this file made, with the secret(s) each was given. */
  const made: Array<{ id: string; endpoint: TestSubscriber; post: Post; secrets: string[] }> = [];

  /** The service again on the same database and simulator, with another SECRETS_ENCRYPTION_KEY (a deploy). */
  async function restart(secretsKey: string | undefined): Promise<void> {
    await harness.service.close();
    harness.service = await startService(db.url, serviceEnv(secretsKey));
    harness.sim.setWebhookUrl(`${harness.service.baseUrl}/webhooks/pozy`);
  }

  function serviceEnv(secretsKey: string | undefined): Record<string, string | undefined> {
    // What startHarness gives the service, with this key.
    return {
      POZY_API_URL: harness.sim.url,
      POZY_API_KEY: harness.sim.apiKey,
      POZY_TIMEOUT_MS: '1000',
      POZY_RATE_LIMIT_PER_MINUTE: '100000',
      RECONCILE_CLOCK_SKEW_MS: '0',
      POZY_MAX_RETRIES: '8',
      ADMIN_TOKEN: HARNESS_ADMIN_TOKEN,
      NOTIFY_RETRY_BASE_MS: '50',
      NOTIFY_RETRY_MAX_MS: '200',
      SECRETS_ENCRYPTION_KEY: secretsKey,
    };
  }

  async function stored(id: string): Promise<StoredSecrets> {
    const { rows } = await harness.service.pool.query<StoredSecrets>(
      'SELECT secret, previous_secret, previous_secret_until FROM subscription WHERE id = $1',
      [id],
    );
    return rows[0];
  }

  /** A subscriber of its own profile's posts, with one post to edit. */
  async function subscribe(
    body: Record<string, unknown> = {},
  ): Promise<{ subscription: SubscriptionBody & { secret: string }; endpoint: TestSubscriber; post: Post }> {
    const endpoint = await TestSubscriber.start();
    subscribers.push(endpoint);
    const profile = world().createProfile(`Brand ${randomUUID().slice(0, 6)}`);
    const account: Account = world().connectAccount(profile._id, 'instagram', 'brand');
    const post = world().createPost({ content: 'v0', accountIds: [account._id], scheduledFor: Date.now() + 60_000 });
    await settled(harness);
    const response = await api('/admin/subscriptions', {
      method: 'POST',
      headers: JSON_ADMIN,
      body: JSON.stringify({ url: endpoint.url, eventTypes: ['post.changed'], profileIds: [profile._id], ...body }),
    });
    expect(response.status).toBe(201);
    const subscription = (await response.json()) as SubscriptionBody & { secret: string };
    made.push({ id: subscription.id, endpoint, post, secrets: [subscription.secret] });
    return { subscription, endpoint, post };
  }

  /** Edits the post (an operator's resync reads it) and resolves the notification the subscriber received for it. */
  async function change(endpoint: TestSubscriber, post: Post): Promise<Received> {
    const content = `edit ${randomUUID().slice(0, 8)}`;
    world().editPost(post._id, { content });
    expect((await api(`/admin/resync/posts/${post._id}`, { method: 'POST', headers: ADMIN })).status).toBe(202);
    return waitFor(`the notification of "${content}"`, async () => endpoint.about(post._id).find((r) => r.json.data.post?.content === content));
  }

  async function rotate(id: string, body: Record<string, unknown> | undefined): Promise<Response> {
    return api(`/admin/subscriptions/${id}/rotate-secret`, {
      method: 'POST',
      headers: body === undefined ? ADMIN : JSON_ADMIN,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  }

  beforeAll(async () => {
    db = await createTestDatabase('secrets');
    // First without a key, as a deployment from before encryption at rest.
    harness = await startHarness(db.url, { env: { NOTIFY_RETRY_BASE_MS: '50', NOTIFY_RETRY_MAX_MS: '200' } });
  });

  afterAll(async () => {
    for (const s of subscribers) await s.close();
    await harness?.sim.stop();
    await harness?.service.close();
    await db?.drop();
  });

  it('without SECRETS_ENCRYPTION_KEY stores the secret as before; with it, the same row keeps working', async () => {
    const { subscription, endpoint, post } = await subscribe();
    expect((await stored(subscription.id)).secret).toBe(subscription.secret);

    await restart(KEY_A);
    expect(verifies(subscription.secret, await change(endpoint, post))).toBe(true);
  });

  it('encrypts a new secret at rest: the column holds no whsec_, the API never answers it, notifications verify', async () => {
    const { subscription, endpoint, post } = await subscribe();
    expect(subscription.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const { secret } = await stored(subscription.id);
    expect(secret).toMatch(/^enc:v1:a:/);
    expect(secret).not.toContain('whsec_');
    expect(secret).not.toContain(subscription.secret.slice(6, 26));

    const read = (await (await api(`/admin/subscriptions/${subscription.id}`, { headers: ADMIN })).json()) as Record<string, unknown>;
    expect(read).toMatchObject({ id: subscription.id, previousSecretUntil: null });
    expect(read).not.toHaveProperty('secret');
    expect(JSON.stringify(read)).not.toContain('enc:v1');

    const received = await change(endpoint, post);
    expect(verifies(subscription.secret, received)).toBe(true);
    expect(String(received.headers['webhook-signature']).split(' ')).toHaveLength(1);
  });

  it('rotates the outbound secret: during the overlap every notification verifies with the old secret and with the new one', async () => {
    const { subscription, endpoint, post } = await subscribe();
    const old = subscription.secret;
    expect(verifies(old, await change(endpoint, post))).toBe(true);

    // No body at all: the defaults (a generated secret, 24 hours).
    const response = await rotate(subscription.id, undefined);
    expect(response.status).toBe(200);
    const rotated = (await response.json()) as SubscriptionBody & { secret: string };
    expect(rotated).toMatchObject({ id: subscription.id, health: { state: 'healthy' } });
    expect(rotated.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(rotated.secret).not.toBe(old);
    expect(Math.abs(Date.parse(rotated.previousSecretUntil!) - (Date.now() + 24 * 3_600_000))).toBeLessThan(60_000);
    made.find((m) => m.id === subscription.id)!.secrets.push(rotated.secret);
    const read = (await (await api(`/admin/subscriptions/${subscription.id}`, { headers: ADMIN })).json()) as Record<string, unknown>;
    expect(read).toMatchObject({ previousSecretUntil: rotated.previousSecretUntil });
    expect(read).not.toHaveProperty('secret');
    const row = await stored(subscription.id);
    expect(row.secret).toMatch(/^enc:v1:a:/);
    expect(row.previous_secret).toMatch(/^enc:v1:a:/);
    expect(`${row.secret}${row.previous_secret}`).not.toContain('whsec_');

    // Receivers still on the old secret and those already on the new one both accept every notification.
    const during: Received[] = [];
    for (let i = 0; i < 3; i++) during.push(await change(endpoint, post));
    for (const received of during) {
      expect(String(received.headers['webhook-signature'])).toMatch(/^v1,\S+ v1,\S+$/);
      expect(verifies(old, received)).toBe(true);
      expect(verifies(rotated.secret, received)).toBe(true);
    }
    // None rejected: every notification of the subscription was delivered (the one before the rotation and the three after).
    const states = await waitFor('every notification recorded as delivered', async () => {
      const { rows } = await harness.service.pool.query<{ state: string }>('SELECT state FROM notification WHERE subscription_id = $1', [
        subscription.id,
      ]);
      return rows.length === 4 && rows.every((r) => r.state === 'delivered') ? rows : undefined;
    });
    expect(states).toHaveLength(4);
    expect(endpoint.received.every((r) => r.answer === 204)).toBe(true);
  });

  it('after the overlap signs with the new secret only, and drops the old one from the database', async () => {
    const { subscription, endpoint, post } = await subscribe();
    const old = subscription.secret;
    const given = `whsec_${randomBytes(32).toString('base64')}`;
    // 0.0005 hours: 1.8 s.
    const response = await rotate(subscription.id, { overlapHours: 0.0005, secret: given });
    expect(response.status).toBe(200);
    const rotated = (await response.json()) as SubscriptionBody & { secret: string };
    expect(rotated.secret).toBe(given);
    made.find((m) => m.id === subscription.id)!.secrets.splice(0, 1, given);
    const until = Date.parse(rotated.previousSecretUntil!);
    expect(until - Date.now()).toBeLessThanOrEqual(1_800);

    await waitFor('the overlap to end', async () => (Date.now() > until + 50 ? true : undefined), 5_000);
    const received = await change(endpoint, post);
    expect(String(received.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect(verifies(given, received)).toBe(true);
    expect(verifies(old, received)).toBe(false);
    expect(await stored(subscription.id)).toMatchObject({ previous_secret: null, previous_secret_until: null });
    const read = (await (await api(`/admin/subscriptions/${subscription.id}`, { headers: ADMIN })).json()) as Record<string, unknown>;
    expect(read).toMatchObject({ previousSecretUntil: null });

    // overlapHours 0: the old secret stops at once.
    const now = (await (await rotate(subscription.id, { overlapHours: 0 })).json()) as SubscriptionBody & { secret: string };
    expect(now.previousSecretUntil).toBeNull();
    made.find((m) => m.id === subscription.id)!.secrets.splice(0, 1, now.secret);
    const after = await change(endpoint, post);
    expect(verifies(now.secret, after)).toBe(true);
    expect(verifies(given, after)).toBe(false);
  });

  it.each([
    ['a negative overlap', { overlapHours: -1 }, 'overlapHours'],
    ['an overlap over a month', { overlapHours: 721 }, 'overlapHours'],
    ['an overlap as a string', { overlapHours: '24' }, 'overlapHours'],
    ['a secret not in whsec_ form', { secret: 'hunter2' }, 'secret'],
    ['an unknown field', { overlap: 3 }, 'overlap'],
  ])('refuses rotating with %s (400 naming it) and changes nothing', async (_what, body, field) => {
    const { id } = made[0];
    const before = await stored(id);
    const response = await rotate(id, body);
    expect(response.status).toBe(400);
    expect(((await response.json()) as { message: string }).message).toContain(field);
    expect(await stored(id)).toEqual(before);
  });

  it('answers 404 for an unknown subscription, 400 for a bad id, 401 without the admin token', async () => {
    expect((await rotate(randomUUID(), {})).status).toBe(404);
    expect((await rotate('not-a-uuid', {})).status).toBe(400);
    const anonymous = await fetch(`${harness.service.baseUrl}/admin/subscriptions/${made[0].id}/rotate-secret`, { method: 'POST' });
    expect(anonymous.status).toBe(401);
  });

  it('drops the secrets of a deleted subscription', async () => {
    const { subscription } = await subscribe();
    expect((await rotate(subscription.id, {})).status).toBe(200);
    expect((await api(`/admin/subscriptions/${subscription.id}`, { method: 'DELETE', headers: ADMIN })).status).toBe(200);
    expect(await stored(subscription.id)).toEqual({ secret: null, previous_secret: null, previous_secret_until: null });
    made.splice(
      made.findIndex((m) => m.id === subscription.id),
      1,
    );
  });

  it('re-encrypts every secret to a new key (in batches, idempotent); with the old key gone every subscriber still verifies', async () => {
    const reencrypt = async (secretsKey: string) => {
      const run = spawnService({ DATABASE_URL: db.url, POZY_API_KEY: 'sk_test_key', SECRETS_ENCRYPTION_KEY: secretsKey }, tmpdir(), BUILT_REENCRYPT, [
        '--batch-size',
        '1',
      ]);
      return { code: await run.exited, output: run.output() };
    };
    const { rows: before } = await harness.service.pool.query<{ secret: string }>('SELECT secret FROM subscription WHERE secret IS NOT NULL');
    // One from before the key (plaintext), the others on key a; one still has its previous secret.
    expect(before.filter((r) => r.secret.startsWith('whsec_'))).toHaveLength(1);
    expect(before.filter((r) => r.secret.startsWith('enc:v1:a:'))).toHaveLength(made.length - 1);

    // b is the newest; a still opens what it encrypted.
    const first = await reencrypt(`${KEY_B},${KEY_A}`);
    expect(first.output).toContain(`${made.length + 1} secret(s) re-encrypted with key "b"`);
    expect(first.output).toContain('every subscription secret is encrypted with key "b"');
    expect(first.code).toBe(0);
    const { rows: after } = await harness.service.pool.query<{ secret: string | null; previous_secret: string | null }>(
      'SELECT secret, previous_secret FROM subscription',
    );
    const values = after.flatMap((r) => [r.secret, r.previous_secret]).filter((v): v is string => v !== null);
    expect(values).toHaveLength(made.length + 1);
    expect(values.filter((v) => !v.startsWith('enc:v1:b:'))).toEqual([]);

    const again = await reencrypt(`${KEY_B},${KEY_A}`);
    expect(again.output).toContain('0 secret(s) re-encrypted with key "b"');
    expect(again.code).toBe(0);

    // Key a retired: every subscriber, the rotated one with both secrets still, gets notifications it verifies.
    await restart(KEY_B);
    for (const { endpoint, post, secrets } of made) {
      const received = await change(endpoint, post);
      for (const secret of secrets) expect(verifies(secret, received)).toBe(true);
    }
  });

  it('refuses to boot with a key missing or wrong, naming it; the re-encryption fails the same way', async () => {
    const run = spawnService(
      { DATABASE_URL: db.url, POZY_API_KEY: 'sk_test_key', SECRETS_ENCRYPTION_KEY: `${key('c')},${KEY_A}` },
      tmpdir(),
      BUILT_REENCRYPT,
    );
    expect(await run.exited).toBe(1);
    expect(run.output()).toMatch(
      /Re-encryption failed: the subscription \S+ secret is encrypted with key "b", which SECRETS_ENCRYPTION_KEY does not hold/,
    );
    const { rows } = await harness.service.pool.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM subscription WHERE secret IS NOT NULL AND secret NOT LIKE 'enc:v1:b:%'",
    );
    expect(rows[0].n).toBe(0);

    await harness.service.close();
    await expect(startService(db.url, serviceEnv(KEY_A))).rejects.toThrow(
      /Subscription secrets cannot be decrypted with SECRETS_ENCRYPTION_KEY: \d+ secret\(s\) encrypted with key "b": .*key "b", which SECRETS_ENCRYPTION_KEY does not hold/,
    );
    await expect(startService(db.url, serviceEnv(key('b')))).rejects.toThrow(/key "b" of SECRETS_ENCRYPTION_KEY does not decrypt/);
    await expect(startService(db.url, serviceEnv(undefined))).rejects.toThrow(/encrypted with key "b"/);

    harness.service = await startService(db.url, serviceEnv(KEY_B));
  });
});
