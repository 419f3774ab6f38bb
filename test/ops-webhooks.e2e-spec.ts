import { PozyWorkspace } from '../simulator/simulator';
import { OPS_EVENT_TYPES } from '../src/notifications/notification-types';
import { createTestDatabase, TestDatabase } from './support/database';
import { Harness, HARNESS_ADMIN_TOKEN, settled, startHarness } from './support/harness';
import { request } from './support/http';
import { parseMetrics } from './support/metrics';
import { deliver, postEvent } from './support/pozy-events';
import { RunningService, startService, waitFor } from './support/service';
import { Received, TestSubscriber, verifies } from './support/subscriber';

/**
 * Operational webhooks with two replicas on one database: a subscriber paused and resumed, a dead letter, a storm of
 * 429s, a breach of each objective and its recovery, and an import's end each reach the team's ops endpoint once,
 * signed like every notification; a failed import once however often it is retried.
 */

const ADMIN = { authorization: `Bearer ${HARNESS_ADMIN_TOKEN}`, 'content-type': 'application/json' };
const SIM_POST_ROUTE = 'GET /v1/posts/:postId';
// Every type the service can send: a new one is subscribed to here by itself.
const OPS_TYPES = [...OPS_EVENT_TYPES];
const ENCRYPTION_KEY = `k1:${Buffer.alloc(32, 5).toString('base64')}`;
/** docs/configuration.md's 2 s (NOTIFICATION_OBJECTIVE_MS's default). */
const NOTIFICATION_OBJECTIVE_MS = 2_000;

describe('operational webhooks (ops.*), with two replicas', () => {
  let db: TestDatabase;
  let harness: Harness;
  let other: RunningService;
  let ops: TestSubscriber;
  let opsSecret: string;
  let failing: TestSubscriber;
  let failingId: string;
  let gone: TestSubscriber;
  let client: PozyWorkspace;
  const replicas = () => [harness.service, other];

  const call = (method: string, path: string, body?: unknown) => request(harness, path, { method, headers: ADMIN, json: body });

  async function subscribe(url: string, eventTypes: string[]): Promise<{ id: string; secret: string }> {
    const created = await call('POST', '/admin/subscriptions', { url, eventTypes });
    expect(created.status).toBe(201);
    return created.body as { id: string; secret: string };
  }

  const told = (type: string) => ops.received.filter((r: Received) => r.json.type === type);
  /** The breaches (or recoveries) told of one objective. */
  const toldOf = (type: 'ops.objective.breached' | 'ops.objective.recovered', objective: string) =>
    told(type).filter((r) => (r.json.data as Record<string, unknown>).objective === objective);

  beforeAll(async () => {
    db = await createTestDatabase('ops_webhooks');
    const env = {
      NOTIFY_PAUSE_AFTER_MS: '1000',
      NOTIFY_RETRY_BASE_MS: '50',
      NOTIFY_RETRY_MAX_MS: '200',
      SECRETS_ENCRYPTION_KEY: ENCRYPTION_KEY,
      INITIAL_IMPORT: 'auto',
      POZY_MAX_RETRIES: '8',
      // A read owed over half a second breaches the objective; the figures read afresh at each look.
      FRESHNESS_OBJECTIVE_MS: '500',
      NOTIFICATION_OBJECTIVE_MS: String(NOTIFICATION_OBJECTIVE_MS),
      STATUS_CACHE_MS: '0',
    };
    harness = await startHarness(db.url, { deliver: false, env });
    client = harness.sim.addWorkspace({ apiKey: 'sk_sim_client', rateLimitPerMinute: 100_000, seedExisting: { posts: 50, accounts: 4 } });
    harness.sim.world.seedWorld({ profiles: 1, accountsPerProfile: 1, posts: 0 });
    other = await startService(db.url, {
      ...env,
      POZY_API_URL: harness.sim.url,
      POZY_API_KEY: harness.sim.apiKey,
      POZY_TIMEOUT_MS: '1000',
      POZY_RATE_LIMIT_PER_MINUTE: '100000',
      RECONCILE_CLOCK_SKEW_MS: '0',
      READ_LAG_GRACE_MS: '0',
      ADMIN_TOKEN: HARNESS_ADMIN_TOKEN,
    });
    ops = await TestSubscriber.start('/ops');
    failing = await TestSubscriber.start('/failing');
    failing.answer([], 500);
    gone = await TestSubscriber.start('/gone');
    gone.answer([], 410);
    opsSecret = (await subscribe(ops.url, OPS_TYPES)).secret;
    failingId = (await subscribe(failing.url, ['post.changed'])).id;
    await subscribe(gone.url, ['post.changed']);
  }, 60_000);

  afterAll(async () => {
    await other?.close();
    await harness?.close();
    for (const s of [ops, failing, gone]) await s?.close();
    await db?.drop();
  });

  it('tells of a subscriber paused and of the dead letter of a refused notification, once each', async () => {
    const world = harness.sim.world;
    const [account] = world.listAccounts();
    const postId = world.createPost({ content: 'told', accountIds: [account._id], scheduledFor: Date.now() + 60_000 })._id;
    // Delivered to both replicas: one event, one read, one notification per subscriber.
    for (const replica of replicas()) await deliver(replica.baseUrl, postEvent(postId, 'post.scheduled', { id: `ev-${postId}` }));

    await waitFor('the paused subscriber told of', async () => (told('ops.subscriber.paused').length > 0 ? true : undefined), 30_000);
    await waitFor('the dead letter told of', async () => (told('ops.dead_letter.added').length > 0 ? true : undefined), 30_000);
    await settled(harness);
    const [paused] = told('ops.subscriber.paused');
    expect(paused.json.data).toMatchObject({ subscriptionId: failingId, workspaceId: null });
    const [letter] = told('ops.dead_letter.added');
    expect(letter.json.data).toMatchObject({ kind: 'notification', resourceKey: `post:${postId}`, workspaceId: 'default' });
    expect(verifies(opsSecret, paused)).toBe(true);
    expect(verifies(opsSecret, letter)).toBe(true);

    // Resumed (the endpoint back): told once, and not paused again.
    failing.answer([], 200);
    expect((await call('POST', `/admin/subscriptions/${failingId}/resume`)).status).toBe(200);
    await waitFor('the recovery told of', async () => (told('ops.subscriber.recovered').length > 0 ? true : undefined));
    await waitFor('the paused subscriber delivered to', async () => (failing.acknowledged.length > 0 ? true : undefined));
    await settled(harness);
    expect(told('ops.subscriber.paused')).toHaveLength(1);
    expect(told('ops.subscriber.recovered')).toHaveLength(1);
    expect(told('ops.dead_letter.added')).toHaveLength(1);
  }, 180_000);

  it('tells of a storm of 429s once, however many pauses and replicas it took', async () => {
    const world = harness.sim.world;
    const [account] = world.listAccounts();
    harness.sim.setFaults({ api429Rate: 1, api429RetryAfter: '1' });
    const posts = Array.from(
      { length: 4 },
      (_, i) => world.createPost({ content: `storm ${i}`, accountIds: [account._id], scheduledFor: Date.now() + 60_000 })._id,
    );
    for (const [i, postId] of posts.entries()) await deliver(replicas()[i % 2].baseUrl, postEvent(postId, 'post.scheduled'));
    await waitFor(
      'three 429s from Pozy',
      async () => ((harness.sim.stats().api.byRoute[SIM_POST_ROUTE]?.['429'] ?? 0) >= 3 ? true : undefined),
      30_000,
    );
    harness.sim.setFaults({ api429Rate: 0 });
    await settled(harness, 60_000);
    await waitFor('the storm told of', async () => (told('ops.budget.paused').length > 0 ? true : undefined));
    expect(told('ops.budget.paused')).toHaveLength(1);
    expect(told('ops.budget.paused')[0].json.data).toMatchObject({ pausedForMs: expect.any(Number), workspaceId: null });
  }, 180_000);

  it('tells of a lag breach on entering it and on leaving it, once each', async () => {
    const breached = () => toldOf('ops.objective.breached', 'freshness').length;
    const recovered = () => toldOf('ops.objective.recovered', 'freshness').length;
    // Whatever the earlier cases made Pozy do, no breach is open now.
    await waitFor('no open breach', async () => (breached() === recovered() ? true : undefined), 30_000);
    const [before, after] = [breached(), recovered()];
    const world = harness.sim.world;
    const [account] = world.listAccounts();
    // Pozy stops answering: the read is retried, owed for longer and longer.
    harness.sim.setFaults({ apiTimeoutRate: 1 });
    const postId = world.createPost({ content: 'late', accountIds: [account._id], scheduledFor: Date.now() + 60_000 })._id;
    await deliver(other.baseUrl, postEvent(postId, 'post.scheduled'));
    await waitFor('the breach told of', async () => (breached() > before ? true : undefined), 30_000);
    harness.sim.setFaults({ apiTimeoutRate: 0 });
    await settled(harness, 60_000);
    await waitFor('the recovery told of', async () => (recovered() > after ? true : undefined), 30_000);
    // Both replicas looked the whole time: one breach, one recovery.
    expect([breached() - before, recovered() - after]).toEqual([1, 1]);
    const [entered] = toldOf('ops.objective.breached', 'freshness').slice(before);
    const [left] = toldOf('ops.objective.recovered', 'freshness').slice(after);
    expect(entered.json.data).toMatchObject({ objective: 'freshness', boundMs: 500, lagMs: expect.any(Number) });
    expect(left.json.data).toMatchObject({ objective: 'freshness', breachedAt: (entered.json.data as Record<string, unknown>).occurredAt });
  }, 180_000);

  it('tells of a notification breach (a healthy subscriber too slow) on entering it and on leaving it, once each', async () => {
    const breached = () => toldOf('ops.objective.breached', 'notification').length;
    const recovered = () => toldOf('ops.objective.recovered', 'notification').length;
    await waitFor('no open notification breach', async () => (breached() === recovered() ? true : undefined), 30_000);
    const [before, after] = [breached(), recovered()];
    // It answers every notification with a 2xx, after twice the objective's bound: healthy, and late.
    const slow = await TestSubscriber.start('/slow');
    slow.slow(2 * NOTIFICATION_OBJECTIVE_MS);
    const { id: slowId } = await subscribe(slow.url, ['post.changed']);
    try {
      const world = harness.sim.world;
      const [account] = world.listAccounts();
      const postId = world.createPost({ content: 'slowly told', accountIds: [account._id], scheduledFor: Date.now() + 60_000 })._id;
      await deliver(other.baseUrl, postEvent(postId, 'post.scheduled'));
      await waitFor('the breach told of', async () => (breached() > before ? true : undefined), 30_000);
      // Its answers come at once again: the late one delivered, nothing is owed.
      slow.slow(0);
      await waitFor('the recovery told of', async () => (recovered() > after ? true : undefined), 30_000);
      await settled(harness);
      // Both replicas looked the whole time: one breach, one recovery.
      expect([breached() - before, recovered() - after]).toEqual([1, 1]);
      const [entered] = toldOf('ops.objective.breached', 'notification').slice(before);
      const [left] = toldOf('ops.objective.recovered', 'notification').slice(after);
      expect(entered.json.data).toMatchObject({ objective: 'notification', boundMs: NOTIFICATION_OBJECTIVE_MS, subscriptionId: slowId });
      expect((entered.json.data as Record<string, unknown>).lagMs).toBeGreaterThan(NOTIFICATION_OBJECTIVE_MS);
      expect(left.json.data).toMatchObject({ objective: 'notification', breachedAt: (entered.json.data as Record<string, unknown>).occurredAt });
      expect(verifies(opsSecret, entered)).toBe(true);
      // The subscriber stayed healthy: its one notification was delivered at the first attempt, late.
      expect(slow.about(postId)).toHaveLength(1);
      const { rows } = await harness.service.pool.query<{ state: string; attempts: number }>(
        'SELECT state, attempts FROM notification WHERE subscription_id = $1',
        [slowId],
      );
      expect(rows).toEqual([{ state: 'delivered', attempts: 1 }]);
    } finally {
      expect((await call('DELETE', `/admin/subscriptions/${slowId}`)).status).toBe(200);
      await slow.close();
    }
  }, 180_000);

  it("tells of an added workspace's import once it succeeded", async () => {
    const added = await call('POST', '/admin/workspaces', { id: 'client', apiKey: client.apiKey, apiUrl: harness.sim.url, manageWebhook: false });
    expect(added.status).toBe(201);
    await waitFor(
      'the import told of',
      async () => (told('ops.import.succeeded').some((r) => r.json.data.workspaceId === 'client') ? true : undefined),
      60_000,
    );
    const [succeeded] = told('ops.import.succeeded').filter((r) => r.json.data.workspaceId === 'client');
    expect(succeeded.json.data).toMatchObject({ runId: expect.any(String), error: null, posts: expect.objectContaining({ created: 50 }) });
    // Each import told of once, on whichever replica ran it (the default workspace's too, if it ended after the subscription).
    const byRun = told('ops.import.succeeded').map((r) => (r.json.data as Record<string, unknown>).runId);
    expect(new Set(byRun).size).toBe(byRun.length);
    expect(told('ops.import.failed')).toEqual([]);
  }, 180_000);

  it('tells of an API key Pozy refuses once, however many reads it fails', async () => {
    const refusedDb = await createTestDatabase('ops_webhooks_refused');
    const refused = await startService(refusedDb.url, {
      POZY_API_URL: harness.sim.url,
      POZY_API_KEY: 'sk_sim_revoked',
      POZY_TIMEOUT_MS: '1000',
      ADMIN_TOKEN: HARNESS_ADMIN_TOKEN,
      SECRETS_ENCRYPTION_KEY: ENCRYPTION_KEY,
    });
    try {
      const created = await fetch(`${refused.baseUrl}/admin/subscriptions`, {
        method: 'POST',
        headers: ADMIN,
        body: JSON.stringify({ url: ops.url, eventTypes: ['ops.api_key.rejected'] }),
      });
      expect(created.status).toBe(201);
      for (const id of ['66aa01f3c2b1e4d5f6a7b801', '66aa01f3c2b1e4d5f6a7b802']) await deliver(refused.baseUrl, postEvent(id, 'post.scheduled'));
      await waitFor('both reads dead-lettered', async () => {
        const { rows } = await refused.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM dead_letter WHERE kind = 'reconcile'");
        return rows[0].n === 2 ? true : undefined;
      });
      await waitFor('the refusal told of', async () => (told('ops.api_key.rejected').length > 0 ? true : undefined));
      expect(told('ops.api_key.rejected')).toHaveLength(1);
      const { data } = told('ops.api_key.rejected')[0].json as unknown as { data: Record<string, unknown> };
      expect(data).toMatchObject({ status: 401, route: 'GET /v1/posts/:id', workspaces: ['default'], workspaceId: null });
      expect(JSON.stringify(data)).not.toContain('sk_sim_revoked');
    } finally {
      await refused.close();
      await refusedDb.drop();
    }
  }, 180_000);

  // After the API key case: this workspace's key is refused too, and told of as ops.api_key.rejected.
  it("tells of a workspace's failed import once, however often it is retried, and counts it on /metrics", async () => {
    const metric = async (name: string) => parseMetrics(await (await fetch(`${harness.service.baseUrl}/metrics`)).text()).get(name);
    const failedOf = () => told('ops.import.failed').filter((r) => r.json.data.workspaceId === 'broken');
    // Pozy takes its key when it is added, then refuses it (401): each attempt of the import fails alike. Its answers
    // are slowed so that the import, which needs several, cannot end before the key is refused.
    const brokenKey = 'sk_sim_broken';
    harness.sim.addWorkspace({
      apiKey: brokenKey,
      rateLimitPerMinute: 100_000,
      seedExisting: { posts: 20, accounts: 2 },
      faults: { apiLatencyMs: 300 },
    });
    const added = await call('POST', '/admin/workspaces', { id: 'broken', apiKey: brokenKey, apiUrl: harness.sim.url, manageWebhook: false });
    expect(added.status).toBe(201);
    await harness.sim.removeWorkspace(brokenKey);

    await waitFor('the failure told of', async () => (failedOf().length > 0 ? true : undefined), 60_000);
    const run = async () =>
      (
        await harness.service.pool.query<{ id: string; status: string; resumed_at: Date; error: string | null }>(
          "SELECT id, status, resumed_at, error FROM sweep_run WHERE workspace_id = 'broken' AND kind = 'import'",
        )
      ).rows;
    const [failed] = await run();
    expect(failed).toMatchObject({ status: 'failed', error: expect.stringContaining('401') });
    // Tried again twice, as a minute after each failure: the supervisor of either replica claims it at its next look.
    // A retry starts only once the attempt before it has let go of the workspace's lock, its failure told of first.
    let resumedAt = failed.resumed_at;
    for (let retry = 1; retry <= 2; retry += 1) {
      await harness.service.pool.query(
        "UPDATE sweep_run SET finished_at = finished_at - interval '2 minutes' WHERE workspace_id = 'broken' AND kind = 'import' AND status = 'failed'",
      );
      const again = await waitFor(
        `retry ${retry} to fail`,
        async () => {
          const [now] = await run();
          return now.status === 'failed' && now.resumed_at > resumedAt ? now : undefined;
        },
        60_000,
      );
      expect(again.id).toBe(failed.id);
      resumedAt = again.resumed_at;
    }
    // Three failures, one occurrence and one notification to the ops subscriber, on whichever replica failed first.
    const { rows } = await harness.service.pool.query<{ events: number; notifications: number }>(
      `SELECT (SELECT count(*)::int FROM ops_event WHERE type = 'ops.import.failed' AND workspace_id = 'broken') AS events,
              (SELECT count(*)::int FROM notification WHERE type = 'ops.import.failed' AND workspace_id = 'broken') AS notifications`,
    );
    expect(rows[0]).toEqual({ events: 1, notifications: 1 });
    expect(failedOf()).toHaveLength(1);
    expect(failedOf()[0].json.data).toMatchObject({ runId: failed.id, error: expect.stringContaining('401'), workspaceId: 'broken' });
    expect(verifies(opsSecret, failedOf()[0])).toBe(true);

    // /metrics counts it, though it is not the environment's workspace (whose import succeeded); a retry under way
    // counts as running, so the gauge is waited for.
    await waitFor('the failed import counted', async () => ((await metric('pozy_sync_workspaces_import_failed')) === 1 ? true : undefined), 30_000);
    expect(await metric('pozy_sync_import_failed')).toBe(0);
    // Paused, it is neither imported nor retried, nor counted.
    expect((await call('PATCH', '/admin/workspaces/broken', { paused: true })).status).toBe(200);
    await waitFor(
      'the paused workspace not counted',
      async () => ((await metric('pozy_sync_workspaces_import_failed')) === 0 ? true : undefined),
      30_000,
    );
  }, 180_000);

  it('takes ops types in a subscription, and names an unknown one', async () => {
    const refused = await call('POST', '/admin/subscriptions', { url: ops.url, eventTypes: ['ops.objective.imagined'] });
    expect(refused.status).toBe(400);
    expect(JSON.stringify(refused.body)).toContain('eventTypes');
  });
});
