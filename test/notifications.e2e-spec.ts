import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { plainToInstance } from 'class-transformer';
import type { Account } from '../simulator/world/pozy-shapes';
import { PostMirrorRepository } from '../src/mirror/posts/post-mirror.repository';
import { PozyPostDto } from '../src/pozy/dto/pozy-post.dto';
import { HARNESS_ADMIN_TOKEN, settled } from './support/harness';
import { freePort } from './support/ports';
import { deliver, PozyEvent } from './support/pozy-events';
import { waitFor } from './support/service';
import { Received, TestSubscriber, verifies } from './support/subscriber';
import { SimulatorSpec, startSpec } from './support/spec';

const ADMIN = { authorization: `Bearer ${HARNESS_ADMIN_TOKEN}` };
const JSON_ADMIN = { ...ADMIN, 'content-type': 'application/json' };
/** DEAD_LETTER_AFTER_MS here: the default 60 s (docs/architecture.md), scaled down for the test. */
const DEAD_AFTER_MS = 1_500;

interface CreatedSubscription {
  id: string;
  secret: string;
  url: string;
  eventTypes: string[];
  profileIds: string[];
  platforms: string[];
  active: boolean;
  health: { state: string; pending: number; deadLetters: number; pausedAt: string | null };
}

interface NotificationDetail {
  id: string;
  state: string;
  sequence: number;
  resourceKey: string;
  attempts: number;
  attemptHistory: Array<{ statusCode: number | null; outcome: string; error: string | null; durationMs: number; replay: boolean }>;
}

describe('change notifications: signed fan-out to subscribers', () => {
  let harness: SimulatorSpec;
  const subscribers: TestSubscriber[] = [];
  const world = () => harness.sim.world;
  const api = (path: string, init: RequestInit = {}) => fetch(`${harness.service.baseUrl}${path}`, init);

  async function subscriber(): Promise<TestSubscriber> {
    const s = await TestSubscriber.start();
    subscribers.push(s);
    return s;
  }

  async function subscribe(body: Record<string, unknown>): Promise<CreatedSubscription> {
    const response = await api('/admin/subscriptions', { method: 'POST', headers: JSON_ADMIN, body: JSON.stringify(body) });
    expect(response.status).toBe(201);
    return (await response.json()) as CreatedSubscription;
  }

  async function profileWithAccounts(platforms: string[]): Promise<{ profileId: string; accounts: Account[] }> {
    const profile = world().createProfile(`Brand ${randomUUID().slice(0, 6)}`);
    const accounts = platforms.map((platform, i) => world().connectAccount(profile._id, platform, `user${i}`));
    await settled(harness);
    return { profileId: profile._id, accounts };
  }

  async function notificationsOf(subscriptionId: string): Promise<Array<{ id: string; state: string; sequence: number; resource_key: string }>> {
    const { rows } = await harness.service.pool.query<{ id: string; state: string; sequence: number; resource_key: string }>(
      'SELECT id, state, sequence, resource_key FROM notification WHERE subscription_id = $1 ORDER BY created_at, id',
      [subscriptionId],
    );
    return rows;
  }

  async function detail(id: string): Promise<NotificationDetail> {
    const response = await api(`/admin/notifications/${id}`, { headers: ADMIN });
    expect(response.status).toBe(200);
    return (await response.json()) as NotificationDetail;
  }

  const ids = (received: Received[]) => received.map((r) => r.headers['webhook-id']);

  /** Pozy sends no event for an edit: an operator's resync is what reads it. */
  async function edit(postId: string, content: string): Promise<void> {
    world().editPost(postId, { content });
    expect((await api(`/admin/resync/posts/${postId}`, { method: 'POST', headers: ADMIN })).status).toBe(202);
  }

  beforeAll(async () => {
    harness = await startSpec('notifications', {
      env: {
        NOTIFY_TIMEOUT_MS: '400',
        NOTIFY_RETRY_BASE_MS: '50',
        NOTIFY_RETRY_MAX_MS: '200',
        DEAD_LETTER_AFTER_MS: String(DEAD_AFTER_MS),
        NOTIFY_PAUSE_AFTER_MS: '3000',
        NOTIFY_REPLAY_PER_SECOND: '20',
      },
      simulator: {},
    });
  });

  afterAll(async () => {
    for (const s of subscribers) await s.close();
    await harness?.close();
  });

  it('sends each matching subscriber one signed notification when a post is published, and none to the others', async () => {
    const { profileId, accounts } = await profileWithAccounts(['instagram', 'linkedin']);
    const post = world().createPost({ content: 'launch', accountIds: accounts.map((a) => a._id), scheduledFor: Date.now() + 60_000 });
    await settled(harness);

    const [byProfile, byPlatform, otherProfile, accountsOnly] = [await subscriber(), await subscriber(), await subscriber(), await subscriber()];
    const matching = [
      { endpoint: byProfile, subscription: await subscribe({ url: byProfile.url, eventTypes: ['post.changed'], profileIds: [profileId] }) },
      {
        endpoint: byPlatform,
        subscription: await subscribe({
          url: byPlatform.url,
          eventTypes: ['post.changed', 'post.deleted'],
          profileIds: [profileId],
          platforms: ['linkedin'],
        }),
      },
    ];
    await subscribe({ url: otherProfile.url, eventTypes: ['post.changed'], profileIds: ['no-such-profile'] });
    await subscribe({ url: accountsOnly.url, eventTypes: ['account.changed'], profileIds: [profileId] });

    world().publishPost(post._id);
    await settled(harness);

    for (const { endpoint, subscription } of matching) {
      const [received] = await waitFor('the notification', async () => (endpoint.about(post._id).length > 0 ? endpoint.about(post._id) : undefined));
      expect(endpoint.received).toHaveLength(1);
      expect(verifies(subscription.secret, received)).toBe(true);
      expect(verifies(`whsec_${Buffer.from('not the secret, 24 bytes!').toString('base64')}`, received)).toBe(false);
      expect(received.headers['idempotency-key']).toBe(received.headers['webhook-id']);
      expect(received.headers['webhook-id']).toMatch(/^msg_[0-9a-f]{32}$/);
      expect(received.headers['content-type']).toBe('application/json');
      expect(received.json).toMatchObject({
        type: 'post.changed',
        data: { id: post._id, post: { id: post._id, status: 'published', content: 'launch', profileIds: [profileId], deletedAt: null } },
      });
      // The body's post is the mirror's, as GET /posts/:id answers it.
      const mirrored = (await (await api(`/posts/${post._id}`)).json()) as Record<string, unknown>;
      expect(received.json.data.post).toEqual(mirrored);
      expect(received.json.data.pozyUpdatedAt).toBe(mirrored.pozyUpdatedAt);
    }
    // Everything is delivered and nothing was queued for the others.
    await waitFor('every notification to be delivered', async () =>
      (await harness.service.pool.query("SELECT 1 FROM notification WHERE state <> 'delivered'")).rowCount === 0 ? true : undefined,
    );
    expect(otherProfile.received).toEqual([]);
    expect(accountsOnly.received).toEqual([]);
  });

  it('sends a subscriber that follows some workspaces only their changes, each notification carrying its workspaceId', async () => {
    const { profileId, accounts } = await profileWithAccounts(['linkedin']);
    const [defaultOnly, acmeOnly, every] = [await subscriber(), await subscriber(), await subscriber()];
    const follows = { eventTypes: ['post.changed'], profileIds: [profileId] };
    const defaults = await subscribe({ url: defaultOnly.url, ...follows, workspaceIds: ['default'] });
    const acme = await subscribe({ url: acmeOnly.url, ...follows, workspaceIds: ['acme'] });
    await subscribe({ url: every.url, ...follows });
    expect(defaults).toMatchObject({ workspaceIds: ['default'] });
    expect(acme).toMatchObject({ workspaceIds: ['acme'] });

    // A change of the default workspace, read from Pozy as usual.
    const post = world().createPost({ content: 'for default', accountIds: [accounts[0]._id], scheduledFor: Date.now() + 60_000 });
    world().publishPost(post._id);
    await settled(harness);
    await waitFor('the default workspace’s notifications', async () =>
      defaultOnly.about(post._id).length > 0 && every.about(post._id).length > 0 ? true : undefined,
    );
    expect(defaultOnly.about(post._id)[0].json).toMatchObject({ data: { id: post._id, workspaceId: 'default', post: { workspaceId: 'default' } } });
    expect(acmeOnly.about(post._id)).toEqual([]);
    const { rows } = await harness.service.pool.query<{ workspace_id: string; subscription_id: string }>(
      'SELECT workspace_id, subscription_id FROM notification WHERE resource_key = $1 ORDER BY subscription_id',
      [`post:${post._id}`],
    );
    expect(rows.every((row) => row.workspace_id === 'default')).toBe(true);
    expect(rows.map((row) => row.subscription_id)).not.toContain(acme.id);

    // The same post written as workspace acme's (what acme's reconcile writes): a subscriber of acme gets it, the
    // default workspace's does not. acme holds no account of the profile, so the subscriptions above that filter by
    // profile match none of its posts: this one follows acme by workspace alone.
    const acmeOnlyAll = await subscribe({ url: acmeOnly.url, eventTypes: ['post.changed'], workspaceIds: ['acme'] });
    const written = await harness.service.app
      .get(PostMirrorRepository)
      .write('acme', plainToInstance(PozyPostDto, world().getPost(post._id)), { readId: randomUUID(), startedAt: new Date(), lastEventAt: null });
    expect(written).toMatchObject({ outcome: 'written', created: 1 });
    await waitFor('acme’s notification', async () => (acmeOnly.about(post._id).length > 0 ? true : undefined));
    expect(acmeOnly.about(post._id).map((r) => r.json.data.workspaceId)).toEqual(['acme']);
    expect(acmeOnly.about(post._id)[0].headers['webhook-id']).toMatch(/^msg_/);
    expect(defaultOnly.about(post._id)).toHaveLength(1);
    const acmeRows = await harness.service.pool.query<{ subscription_id: string }>(
      `SELECT subscription_id FROM notification WHERE workspace_id = 'acme' AND resource_key = $1`,
      [`post:${post._id}`],
    );
    expect(acmeRows.rows.map((row) => row.subscription_id)).toEqual([acmeOnlyAll.id]);
  });

  it.each([
    ['a workspace id that is no slug', { workspaceIds: ['Not A Slug'] }],
    ['workspace ids that are no list', { workspaceIds: 'acme' }],
    ['over 100 workspace ids', { workspaceIds: Array.from({ length: 101 }, (_, i) => `w${i}`) }],
  ])('refuses a subscription with %s (400 naming workspaceIds), storing nothing', async (_what, field) => {
    const before = (await harness.service.pool.query('SELECT count(*)::int AS n FROM subscription')).rows[0].n as number;
    const response = await api('/admin/subscriptions', {
      method: 'POST',
      headers: JSON_ADMIN,
      body: JSON.stringify({ url: 'https://example.com/hook', eventTypes: ['post.changed'], ...field }),
    });
    expect(response.status).toBe(400);
    expect(JSON.stringify(await response.json())).toMatch(/workspaceIds/);
    expect((await harness.service.pool.query('SELECT count(*)::int AS n FROM subscription')).rows[0].n).toBe(before);
  });

  it('notifies nobody for a duplicate event, an out-of-order one, or a re-read that finds nothing new', async () => {
    const endpoint = await subscriber();
    const { profileId, accounts } = await profileWithAccounts(['threads']);
    const events: PozyEvent[] = [];
    const stop = world().onEvent((event) => events.push(event as unknown as PozyEvent));
    const post = world().createPost({ content: 'steady', accountIds: [accounts[0]._id], scheduledFor: Date.now() + 60_000 });
    stop();
    const subscription = await subscribe({ url: endpoint.url, eventTypes: ['post.changed'], profileIds: [profileId] });
    await settled(harness);
    await waitFor('the first notification', async () => (endpoint.acknowledged.length === 1 ? true : undefined));
    // Read once it is delivered: a snapshot taken while it was still pending would differ from the later one in its
    // state alone.
    const before = await waitFor('the first notification to be recorded as delivered', async () => {
      const rows = await notificationsOf(subscription.id);
      return rows.every((row) => row.state === 'delivered') ? rows : undefined;
    });
    expect(before).toHaveLength(1);

    // The same event again (a duplicate), an event older than the mirror's state under a new id (out of order), and a
    // forced re-read.
    const [scheduled] = events;
    expect(scheduled.event).toBe('post.scheduled');
    expect((await deliver(harness.service.baseUrl, scheduled)).body).toMatchObject({ duplicate: true });
    expect((await deliver(harness.service.baseUrl, { ...scheduled, id: randomUUID() })).body).toMatchObject({ duplicate: false });
    expect((await api(`/admin/resync/posts/${post._id}`, { method: 'POST', headers: ADMIN })).status).toBe(202);
    await settled(harness);
    const { rows } = await harness.service.pool.query<{ forced: boolean }>(
      'SELECT last_read_at > forced_at AS forced FROM reconcile_request WHERE key = $1',
      [`post:${post._id}`],
    );
    expect(rows[0].forced).toBe(true); // the resync did read Pozy again

    // Notifications are written with the mirror write that causes them: none written means none will be sent.
    expect(await notificationsOf(subscription.id)).toEqual(before);
    expect(endpoint.received).toHaveLength(1);
  });

  it('retries a subscriber answering 500 twice, then 200: delivered, three attempts, one idempotency key', async () => {
    const endpoint = await subscriber();
    endpoint.answer([500, 500], 200);
    const { profileId, accounts } = await profileWithAccounts(['bluesky']);
    const subscription = await subscribe({ url: endpoint.url, eventTypes: ['post.changed'], profileIds: [profileId] });
    world().createPost({ content: 'third time lucky', accountIds: [accounts[0]._id], scheduledFor: Date.now() + 60_000 });
    await settled(harness);

    const [notification] = await notificationsOf(subscription.id);
    await waitFor('the delivery', async () => ((await detail(notification.id)).state === 'delivered' ? true : undefined));
    const delivered = await detail(notification.id);
    expect(delivered.attempts).toBe(3);
    expect(delivered.attemptHistory.map((a) => [a.statusCode, a.outcome])).toEqual([
      [500, 'retry'],
      [500, 'retry'],
      [200, 'delivered'],
    ]);
    expect(endpoint.received).toHaveLength(3);
    expect(new Set(ids(endpoint.received))).toEqual(new Set([notification.id]));
    expect(new Set(endpoint.received.map((r) => r.headers['idempotency-key']))).toEqual(new Set([notification.id]));
    expect(endpoint.received.every((r) => verifies(subscription.secret, r))).toBe(true);
    expect(new Set(endpoint.received.map((r) => r.body)).size).toBe(1); // the same bytes every time
  });

  it('honours Retry-After on a 429, and dead-letters at once an answer no retry can change (410)', async () => {
    const endpoint = await subscriber();
    endpoint.answer([{ status: 429, headers: { 'retry-after': '1' } }, 410], 204);
    const { profileId, accounts } = await profileWithAccounts(['linkedin']);
    const subscription = await subscribe({ url: endpoint.url, eventTypes: ['post.changed'], profileIds: [profileId] });
    world().createPost({ content: 'gone for good', accountIds: [accounts[0]._id], scheduledFor: Date.now() + 60_000 });
    await settled(harness);
    const [notification] = await notificationsOf(subscription.id);

    const dead = await waitFor('the dead letter', async () =>
      (await detail(notification.id)).state === 'dead' ? detail(notification.id) : undefined,
    );
    expect(dead.attemptHistory.map((a) => [a.statusCode, a.outcome])).toEqual([
      [429, 'retry'],
      [410, 'dead'],
    ]);
    // The retry waited for Retry-After (1 s), not the 50 ms backoff.
    expect(endpoint.received[1].at - endpoint.received[0].at).toBeGreaterThanOrEqual(950);
    const letters = (await (await api('/admin/dead-letters?queue=delivery', { headers: ADMIN })).json()) as {
      data: Array<{ kind: string; reason: string; error: string; payload: { notificationId: string } }>;
    };
    expect(letters.data.find((l) => l.payload.notificationId === notification.id)).toMatchObject({
      kind: 'notification',
      reason: 'The endpoint answered 410, which retrying cannot change',
      error: 'HTTP 410',
    });
  });

  it('dead-letters a notification whose subscriber keeps timing out, and a replay sends it with the same webhook-id', async () => {
    const endpoint = await subscriber();
    endpoint.answer([], 'hang');
    const { profileId, accounts } = await profileWithAccounts(['twitter']);
    const subscription = await subscribe({ url: endpoint.url, eventTypes: ['post.changed'], profileIds: [profileId] });
    world().createPost({ content: 'into the void', accountIds: [accounts[0]._id], scheduledFor: Date.now() + 60_000 });
    await settled(harness);
    const [notification] = await notificationsOf(subscription.id);

    const dead = await waitFor('the dead letter', async () =>
      (await detail(notification.id)).state === 'dead' ? detail(notification.id) : undefined,
    );
    expect(dead.attempts).toBeGreaterThanOrEqual(2);
    expect(dead.attemptHistory.every((a) => a.statusCode === null && /Timeout|Abort/.test(a.error ?? ''))).toBe(true);
    const letters = (await (await api('/admin/dead-letters?queue=delivery', { headers: ADMIN })).json()) as {
      data: Array<{
        id: string;
        kind: string;
        reason: string;
        attempts: number;
        firstFailureAt: string;
        lastFailureAt: string;
        payload: { notificationId: string };
      }>;
    };
    const letter = letters.data.find((l) => l.payload.notificationId === notification.id)!;
    expect(letter).toMatchObject({ kind: 'notification', resourceKey: notification.resource_key, attempts: dead.attempts });
    expect(letter.reason).toMatch(/timed out or was unreachable for over 1.5 s/);
    expect(Date.parse(letter.lastFailureAt) - Date.parse(letter.firstFailureAt)).toBeGreaterThan(DEAD_AFTER_MS);
    const status = (await (await api('/sync/status')).json()) as { deadLetters: { delivery: number } };
    expect(status.deadLetters.delivery).toBeGreaterThanOrEqual(1);

    // The subscriber recovers; the operator replays the letter.
    endpoint.answer([], 204);
    const before = endpoint.received.length;
    const replay = await api(`/admin/dead-letters/${letter.id}/replay`, { method: 'POST', headers: ADMIN });
    expect(replay.status).toBe(202);
    expect(await replay.json()).toEqual({ replayed: true, notification: notification.id });
    await waitFor('the replayed delivery', async () => ((await detail(notification.id)).state === 'delivered' ? true : undefined));
    const replayed = endpoint.received.slice(before);
    expect(ids(replayed)).toEqual([notification.id]);
    expect(verifies(subscription.secret, replayed[0])).toBe(true);
    expect((await detail(notification.id)).attemptHistory.at(-1)).toMatchObject({ outcome: 'delivered', replay: true });
    const after = (await (await api('/admin/dead-letters?queue=delivery', { headers: ADMIN })).json()) as {
      data: Array<{ id: string; replayedAt: string | null }>;
    };
    expect(after.data.find((l) => l.id === letter.id)!.replayedAt).not.toBeNull();
  });

  it('does not let a dead subscriber slow the delivery to a healthy one', async () => {
    const { profileId, accounts } = await profileWithAccounts(['instagram']);
    const healthy = await subscriber();
    await subscribe({ url: healthy.url, eventTypes: ['post.changed'], profileIds: [profileId] });
    const posts = Array.from({ length: 12 }, (_, i) =>
      world().createPost({ content: `alone ${i}`, accountIds: [accounts[0]._id], scheduledFor: Date.now() + 60_000 }),
    );
    await settled(harness);
    await waitFor('the healthy subscriber alone', async () => (healthy.received.length === posts.length ? true : undefined));
    const alone = lagsMs(healthy.received);

    // Now a subscriber that never answers gets the same notifications: more than its NOTIFY_CONCURRENCY (8) at once.
    const dead = await subscriber();
    dead.answer([], 'hang');
    await subscribe({ url: dead.url, eventTypes: ['post.changed'], profileIds: [profileId] });
    for (const post of posts) await edit(post._id, `${post.content}, edited`);
    await settled(harness);
    await waitFor('the healthy subscriber beside a dead one', async () => (healthy.received.length === 2 * posts.length ? true : undefined));
    const beside = lagsMs(healthy.received.slice(posts.length));
    expect(healthy.received.every((r) => r.answer === 204)).toBe(true);
    expect(dead.received.length).toBeGreaterThan(0);
    // The measurement: from the mirror write to the healthy subscriber's receipt, alone and beside the dead one.
    // (Printed, not asserted: tests never fail on timing. The dead one's attempts each wait out the 400 ms timeout.)
    process.stdout.write(
      `notifications: healthy subscriber, mirror write to receipt p50 ${p50(alone)} ms alone, ` +
        `${p50(beside)} ms beside a dead one (max ${Math.max(...beside)} ms)\n`,
    );
  });

  it('never sends an older version after a newer one: superseded notifications are skipped', async () => {
    const endpoint = await subscriber();
    endpoint.answer([], 503);
    const { profileId, accounts } = await profileWithAccounts(['linkedin']);
    const subscription = await subscribe({ url: endpoint.url, eventTypes: ['post.changed'], profileIds: [profileId] });
    const post = world().createPost({ content: 'v1', accountIds: [accounts[0]._id], scheduledFor: Date.now() + 60_000 });
    await settled(harness);
    for (const content of ['v2', 'v3', 'v4']) {
      await edit(post._id, content);
      await settled(harness);
    }
    await waitFor('a failed attempt', async () => (endpoint.received.length > 0 ? true : undefined));
    endpoint.answer([], 200);

    const versions = await notificationsOf(subscription.id);
    expect(versions.map((v) => v.sequence)).toEqual([1, 2, 3, 4]);
    const newest = versions.at(-1)!;
    await waitFor('the newest version delivered', async () => ((await detail(newest.id)).state === 'delivered' ? true : undefined));
    expect((await notificationsOf(subscription.id)).map((v) => v.state)).toEqual(['superseded', 'superseded', 'superseded', 'delivered']);
    const acknowledged = endpoint.acknowledged.map((r) => r.json.data.sequence);
    expect(acknowledged).toEqual([4]);
    expect(endpoint.acknowledged[0].json.data.post).toMatchObject({ content: 'v4' });
    // Every request, acknowledged or not, came in version order.
    const sent = endpoint.received.map((r) => r.json.data.sequence);
    expect(sent).toEqual([...sent].sort((a, b) => a - b));

    // Replaying an older version is refused: the subscriber already has a newer one.
    const refused = await api(`/admin/notifications/${versions[0].id}/replay`, { method: 'POST', headers: ADMIN });
    expect(refused.status).toBe(409);
    expect(await refused.json()).toMatchObject({ error: 'superseded', details: { newer: newest.id } });
  });

  it('resolves a dead-lettered version once a newer one of the resource is delivered', async () => {
    const endpoint = await subscriber();
    endpoint.answer([422], 204);
    const { profileId, accounts } = await profileWithAccounts(['threads']);
    const subscription = await subscribe({ url: endpoint.url, eventTypes: ['post.changed'], profileIds: [profileId] });
    const post = world().createPost({ content: 'refused once', accountIds: [accounts[0]._id], scheduledFor: Date.now() + 60_000 });
    await settled(harness);
    const [first] = await notificationsOf(subscription.id);
    await waitFor('the dead letter', async () => ((await detail(first.id)).state === 'dead' ? true : undefined));
    type Letter = {
      id: string;
      payload: { notificationId: string };
      replayedAt: string | null;
      resolvedAt: string | null;
      resolution: string | null;
    };
    const letterOf = async () =>
      ((await (await api('/admin/dead-letters?queue=delivery', { headers: ADMIN })).json()) as { data: Letter[] }).data.find(
        (l) => l.payload.notificationId === first.id,
      )!;
    expect(await letterOf()).toMatchObject({ replayedAt: null, resolvedAt: null });

    // The subscriber accepts the next version: the refused one is obsolete, and no longer waits for an operator.
    await edit(post._id, 'refused once, then edited');
    await settled(harness);
    const [, second] = await notificationsOf(subscription.id);
    await waitFor('the newer version delivered', async () => ((await detail(second.id)).state === 'delivered' ? true : undefined));
    const letter = await letterOf();
    expect(letter).toMatchObject({ replayedAt: null, resolution: 'superseded: the subscriber received a newer version' });
    expect(letter.resolvedAt).toEqual(expect.any(String));
    expect((await detail(first.id)).state).toBe('superseded');
    const replay = await api(`/admin/dead-letters/${letter.id}/replay`, { method: 'POST', headers: ADMIN });
    expect(replay.status).toBe(409);
    expect(endpoint.acknowledged.map((r) => r.json.data.sequence)).toEqual([2]);
  });

  it('notifies account changes and removals', async () => {
    const endpoint = await subscriber();
    const { profileId, accounts } = await profileWithAccounts(['instagram', 'twitter']);
    await subscribe({ url: endpoint.url, eventTypes: ['account.changed', 'account.removed'], profileIds: [profileId], platforms: ['instagram'] });
    world().disconnectAccount(accounts[0]._id);
    world().disconnectAccount(accounts[1]._id); // twitter: filtered out
    await settled(harness);
    await waitFor('the account.changed', async () => (endpoint.received.length === 1 ? true : undefined));
    expect(endpoint.received[0].json).toMatchObject({
      type: 'account.changed',
      data: {
        id: accounts[0]._id,
        sequence: 2,
        account: { id: accounts[0]._id, profileId, platform: 'instagram', isActive: false, removedAt: null },
      },
    });

    // Pozy sends no event for a removed account either: a resync of the profile's accounts finds it gone.
    world().removeAccount(accounts[0]._id);
    expect((await api(`/admin/resync/profiles/${profileId}/accounts`, { method: 'POST', headers: ADMIN })).status).toBe(202);
    await settled(harness);
    await waitFor('the account.removed', async () => (endpoint.received.length === 2 ? true : undefined));
    expect(endpoint.received[1].json).toMatchObject({ type: 'account.removed', data: { id: accounts[0]._id, sequence: 3 } });
    expect(endpoint.received[1].json.data.account?.removedAt).toEqual(expect.any(String));
  });

  it('pauses a subscriber that keeps failing, shows it in /sync/status, and resumes on request', async () => {
    const endpoint = await subscriber();
    endpoint.answer([], 500);
    const { profileId, accounts } = await profileWithAccounts(['threads']);
    const subscription = await subscribe({ url: endpoint.url, eventTypes: ['post.changed'], profileIds: [profileId] });
    world().createPost({ content: 'patience', accountIds: [accounts[0]._id], scheduledFor: Date.now() + 60_000 });
    await settled(harness);

    type Status = {
      notifications: { subscribers: Array<{ id: string; health: { state: string; pausedAt: string | null; pausedReason: string | null } }> };
    };
    const paused = await waitFor(
      'the circuit breaker',
      async () => {
        const status = (await (await api('/sync/status')).json()) as Status;
        // The status is one reading shared for STATUS_CACHE_MS: one taken before the subscription existed lacks it.
        const mine = status.notifications.subscribers.find((s) => s.id === subscription.id);
        return mine?.health.state === 'paused' ? mine : undefined;
      },
      120_000,
    );
    expect(paused.health.pausedReason).toMatch(/every attempt failed since .*HTTP 500/);
    // Paused: no attempt starts after the pause (the ones then in flight finish).
    const [notification] = await notificationsOf(subscription.id);
    const { rows } = await harness.service.pool.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM notification_attempt WHERE notification_id = $1 AND attempted_at > $2',
      [notification.id, paused.health.pausedAt],
    );
    expect(rows[0].n).toBe(0);
    expect(notification.state).toBe('pending');

    endpoint.answer([], 200);
    const resumed = await api(`/admin/subscriptions/${subscription.id}/resume`, { method: 'POST', headers: ADMIN });
    expect(resumed.status).toBe(200);
    expect(((await resumed.json()) as CreatedSubscription).health.state).toBe('healthy');
    await waitFor('the delivery after resuming', async () => ((await detail(notification.id)).state === 'delivered' ? true : undefined));
  }, 300_000);

  it('replays a subscription in bulk since a time, from history or dead letters, dry run first, throttled', async () => {
    const endpoint = await subscriber();
    const { profileId, accounts } = await profileWithAccounts(['bluesky']);
    const subscription = await subscribe({ url: endpoint.url, eventTypes: ['post.changed'], profileIds: [profileId] });
    const since = new Date().toISOString();
    for (let i = 0; i < 5; i += 1) world().createPost({ content: `replay ${i}`, accountIds: [accounts[0]._id], scheduledFor: Date.now() + 60_000 });
    await settled(harness);
    await waitFor('the first deliveries', async () => (endpoint.acknowledged.length === 5 ? true : undefined));
    const first = ids(endpoint.received);

    const path = `/admin/subscriptions/${subscription.id}/replay?since=${encodeURIComponent(since)}`;
    const dead = await api(`${path}&source=dead-letters&dryRun=true`, { method: 'POST', headers: ADMIN });
    expect(await dead.json()).toMatchObject({ count: 0, dryRun: true });
    const dry = await api(`${path}&source=history&dryRun=true`, { method: 'POST', headers: ADMIN });
    expect(dry.status).toBe(202);
    expect(await dry.json()).toMatchObject({ subscriptionId: subscription.id, source: 'history', count: 5, dryRun: true });
    expect(endpoint.received).toHaveLength(5); // a dry run sends nothing

    const real = await api(`${path}&source=history`, { method: 'POST', headers: ADMIN });
    expect(await real.json()).toMatchObject({ count: 5, dryRun: false });
    // Throttled: at most NOTIFY_REPLAY_PER_SECOND (20) a second, so due 50 ms apart.
    const { rows } = await harness.service.pool.query<{ next_attempt_at: Date | null; delivered_at: Date | null }>(
      'SELECT next_attempt_at, delivered_at FROM notification WHERE subscription_id = $1 ORDER BY next_attempt_at NULLS LAST',
      [subscription.id],
    );
    const due = rows.map((r) => r.next_attempt_at).filter((d): d is Date => d !== null);
    for (let i = 1; i < due.length; i += 1) expect(due[i].getTime() - due[i - 1].getTime()).toBeGreaterThanOrEqual(49);
    await waitFor('the replays', async () => (endpoint.acknowledged.length === 10 ? true : undefined));
    const again = ids(endpoint.received.slice(5));
    expect(new Set(again)).toEqual(new Set(first)); // the same webhook-ids
    const arrivals = endpoint.received.slice(5).map((r) => r.at);
    expect(arrivals[4] - arrivals[0]).toBeGreaterThanOrEqual(4 * 50 - 20);
  });

  it('runs the example receiver docs/consuming.md shows: it verifies a real notification and refuses a forged one', async () => {
    const port = await freePort();
    const secret = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;
    const child = spawn(process.execPath, [join(__dirname, '..', 'examples', 'notification-receiver.mjs')], {
      env: { PATH: process.env.PATH ?? '', POZY_SYNC_SECRET: secret, PORT: String(port) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    try {
      await waitFor('the example receiver', async () => (output.includes('listening') ? true : undefined));
      const { profileId, accounts } = await profileWithAccounts(['instagram']);
      await subscribe({ url: `http://127.0.0.1:${port}/pozy`, eventTypes: ['post.changed'], profileIds: [profileId], secret });
      const post = world().createPost({ content: 'for the example', accountIds: [accounts[0]._id], scheduledFor: Date.now() + 60_000 });
      await settled(harness);
      await waitFor('the example to verify it', async () =>
        output.includes(`verified post.changed ${post._id} sequence 1 (msg_`) ? true : undefined,
      );

      const forged = await fetch(`http://127.0.0.1:${port}/pozy`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'webhook-id': 'msg_forged',
          'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
          'webhook-signature': 'v1,Zm9yZ2Vk',
        },
        body: JSON.stringify({ type: 'post.changed', timestamp: new Date().toISOString(), data: { id: post._id } }),
      });
      expect(forged.status).toBe(401);
      await waitFor('the example to log the refusal', async () => (output.includes('rejected: No matching signature found') ? true : undefined));
    } finally {
      child.kill('SIGTERM');
    }
  });

  it('stops notifying a deleted subscription and cancels what it had pending', async () => {
    const endpoint = await subscriber();
    endpoint.answer([], 'hang');
    const { profileId, accounts } = await profileWithAccounts(['twitter']);
    const subscription = await subscribe({ url: endpoint.url, eventTypes: ['post.changed'], profileIds: [profileId] });
    const post = world().createPost({ content: 'soon gone', accountIds: [accounts[0]._id], scheduledFor: Date.now() + 60_000 });
    await settled(harness);

    const deleted = await api(`/admin/subscriptions/${subscription.id}`, { method: 'DELETE', headers: ADMIN });
    expect(deleted.status).toBe(200);
    expect(await deleted.json()).toEqual({ id: subscription.id, deleted: true, cancelled: 1 });
    expect((await api(`/admin/subscriptions/${subscription.id}`, { headers: ADMIN })).status).toBe(404);
    expect((await api(`/admin/subscriptions/${subscription.id}`, { method: 'DELETE', headers: ADMIN })).status).toBe(404);
    await edit(post._id, 'gone');
    await settled(harness);
    expect((await notificationsOf(subscription.id)).map((n) => n.state)).toEqual(['cancelled']);
  });
});

describe('the subscriptions API', () => {
  let harness: SimulatorSpec;
  const api = (path: string, init: RequestInit = {}) => fetch(`${harness.service.baseUrl}${path}`, init);
  const count = async () => (await harness.service.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM subscription')).rows[0].n;
  const post = (body: string, headers: Record<string, string> = JSON_ADMIN) => api('/admin/subscriptions', { method: 'POST', headers, body });

  beforeAll(async () => {
    harness = await startSpec('subscriptions', { simulator: { deliver: false } });
  });

  afterAll(async () => {
    await harness?.close();
  });

  it('creates, lists, reads, updates and deletes a subscription; the secret is shown once', async () => {
    const created = await post(
      JSON.stringify({ url: 'https://hooks.example.com/pozy', eventTypes: ['post.changed', 'account.removed'], description: 'ours' }),
    );
    expect(created.status).toBe(201);
    const subscription = (await created.json()) as CreatedSubscription & { description: string };
    expect(subscription).toMatchObject({
      url: 'https://hooks.example.com/pozy',
      eventTypes: ['post.changed', 'account.removed'],
      profileIds: [],
      platforms: [],
      active: true,
      description: 'ours',
      health: { state: 'healthy', pending: 0, deadLetters: 0 },
    });
    expect(subscription.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const listed = (await (await api('/admin/subscriptions', { headers: ADMIN })).json()) as { data: Array<Record<string, unknown>> };
    expect(listed.data.map((s) => s.id)).toEqual([subscription.id]);
    expect(listed.data[0]).not.toHaveProperty('secret');
    const read = (await (await api(`/admin/subscriptions/${subscription.id}`, { headers: ADMIN })).json()) as Record<string, unknown>;
    expect(read).not.toHaveProperty('secret');

    const given = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
    const second = (await (
      await post(JSON.stringify({ url: 'http://127.0.0.1:8080/in', eventTypes: ['post.deleted'], secret: given }))
    ).json()) as CreatedSubscription;
    expect(second.secret).toBe(given);
    const { rows } = await harness.service.pool.query<{ secret: string }>('SELECT secret FROM subscription WHERE id = $1', [second.id]);
    expect(rows[0].secret).toBe(given);

    const patched = await api(`/admin/subscriptions/${second.id}`, {
      method: 'PATCH',
      headers: JSON_ADMIN,
      body: JSON.stringify({ active: false, platforms: ['instagram'] }),
    });
    expect(patched.status).toBe(200);
    expect(await patched.json()).toMatchObject({
      id: second.id,
      active: false,
      platforms: ['instagram'],
      eventTypes: ['post.deleted'],
      health: { state: 'inactive' },
    });

    const deleted = await api(`/admin/subscriptions/${second.id}`, { method: 'DELETE', headers: ADMIN });
    expect(await deleted.json()).toEqual({ id: second.id, deleted: true, cancelled: 0 });
    const after = (await (await api('/admin/subscriptions', { headers: ADMIN })).json()) as { data: Array<{ id: string }> };
    expect(after.data.map((s) => s.id)).toEqual([subscription.id]);
  });

  it.each([
    ['a URL of another scheme', { url: 'ftp://hooks.example.com/pozy', eventTypes: ['post.changed'] }, 'url'],
    ['a URL that is not one', { url: 'not a url', eventTypes: ['post.changed'] }, 'url'],
    ['no URL', { eventTypes: ['post.changed'] }, 'url'],
    ['no event types', { url: 'https://hooks.example.com/pozy' }, 'eventTypes'],
    ['an empty list of event types', { url: 'https://hooks.example.com/pozy', eventTypes: [] }, 'eventTypes'],
    ['an unknown event type', { url: 'https://hooks.example.com/pozy', eventTypes: ['post.published'] }, 'eventTypes'],
    ['a secret not in whsec_ form', { url: 'https://hooks.example.com/pozy', eventTypes: ['post.changed'], secret: 'hunter2' }, 'secret'],
    [
      'a secret too short',
      { url: 'https://hooks.example.com/pozy', eventTypes: ['post.changed'], secret: `whsec_${Buffer.alloc(8).toString('base64')}` },
      'secret',
    ],
    ['profileIds not a list', { url: 'https://hooks.example.com/pozy', eventTypes: ['post.changed'], profileIds: 'p1' }, 'profileIds'],
    ['a platform name with spaces', { url: 'https://hooks.example.com/pozy', eventTypes: ['post.changed'], platforms: ['insta gram'] }, 'platforms'],
    ['active not a boolean', { url: 'https://hooks.example.com/pozy', eventTypes: ['post.changed'], active: 'yes' }, 'active'],
    ['an unknown field', { url: 'https://hooks.example.com/pozy', eventTypes: ['post.changed'], retries: 3 }, 'retries'],
  ])('refuses %s with a 400 naming the field, and stores nothing', async (_what, body, field) => {
    const before = await count();
    const response = await post(JSON.stringify(body));
    expect(response.status).toBe(400);
    const error = (await response.json()) as { error: string; message: string };
    expect(error.message).toContain(field);
    expect(await count()).toBe(before);
  });

  it('refuses malformed, oversized, non-JSON and unauthenticated requests, storing nothing', async () => {
    const before = await count();
    const valid = JSON.stringify({ url: 'https://hooks.example.com/pozy', eventTypes: ['post.changed'] });

    const malformed = await post('{"url": "https://hooks.example.com/pozy", ');
    expect(malformed.status).toBe(400);
    expect(await malformed.json()).toMatchObject({ error: 'malformed_json' });

    const array = await post('[1, 2]');
    expect(array.status).toBe(400);

    const oversized = await post(
      JSON.stringify({ url: 'https://hooks.example.com/pozy', eventTypes: ['post.changed'], description: 'x'.repeat(1024 * 1024 + 1) }),
    );
    expect(oversized.status).toBe(413);

    const text = await post(valid, { ...ADMIN, 'content-type': 'text/plain' });
    expect(text.status).toBe(415);

    const unauthenticated = await post(valid, { 'content-type': 'application/json' });
    expect(unauthenticated.status).toBe(401);
    expect(await unauthenticated.json()).toMatchObject({ error: 'missing_token' });
    const wrongToken = await post(valid, { 'content-type': 'application/json', authorization: 'Bearer not-the-token' });
    expect(wrongToken.status).toBe(403);
    expect(await wrongToken.json()).toMatchObject({ error: 'invalid_token' });
    for (const path of ['/admin/subscriptions', '/admin/notifications']) expect((await api(path)).status).toBe(401);

    expect(await count()).toBe(before);
  });

  it('answers 400 for a bad id, a bad replay query, or a bad PATCH, and 404 for an unknown subscription', async () => {
    expect((await api('/admin/subscriptions/not-a-uuid', { headers: ADMIN })).status).toBe(400);
    expect((await api(`/admin/subscriptions/${randomUUID()}`, { headers: ADMIN })).status).toBe(404);
    expect((await api(`/admin/subscriptions/${randomUUID()}/resume`, { method: 'POST', headers: ADMIN })).status).toBe(404);
    expect((await api('/admin/notifications/msg_nothex', { headers: ADMIN })).status).toBe(400);
    expect((await api(`/admin/notifications/msg_${'0'.repeat(32)}`, { headers: ADMIN })).status).toBe(404);
    const badReplay = await api(`/admin/subscriptions/${randomUUID()}/replay?since=yesterday&source=history`, { method: 'POST', headers: ADMIN });
    expect(badReplay.status).toBe(400);
    expect(((await badReplay.json()) as { message: string }).message).toContain('since');
    const unknownReplay = await api(`/admin/subscriptions/${randomUUID()}/replay?since=2026-01-01T00:00:00Z&source=history`, {
      method: 'POST',
      headers: ADMIN,
    });
    expect(unknownReplay.status).toBe(404);
    const created = (await (
      await post(JSON.stringify({ url: 'https://hooks.example.com/x', eventTypes: ['post.changed'] }))
    ).json()) as CreatedSubscription;
    const badPatch = await api(`/admin/subscriptions/${created.id}`, {
      method: 'PATCH',
      headers: JSON_ADMIN,
      body: JSON.stringify({ url: 'gopher://x' }),
    });
    expect(badPatch.status).toBe(400);
    const secretPatch = await api(`/admin/subscriptions/${created.id}`, {
      method: 'PATCH',
      headers: JSON_ADMIN,
      body: JSON.stringify({ secret: 'whsec_x' }),
    });
    expect(secretPatch.status).toBe(400);
    expect(((await (await api(`/admin/subscriptions/${created.id}`, { headers: ADMIN })).json()) as CreatedSubscription).url).toBe(
      'https://hooks.example.com/x',
    );
  });
});

/** Per notification received, ms from the mirror write (the post's syncedAt) to its arrival. */
function lagsMs(received: Received[]): number[] {
  return received.map((r) => r.at - Date.parse(String(r.json.data.post?.syncedAt)));
}

function p50(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}
