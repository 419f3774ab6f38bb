import { TestSubscriber } from './support/subscriber';
import { PozySimulator } from '../simulator/simulator';
import type { PozyWorkspace } from '../simulator/workspace';
import { createTestDatabase, TestDatabase } from './support/database';
import { mirrorDifferences } from '../simulator/mirror-check';
import { deliver, postEvent } from './support/pozy-events';
import { timedRead } from './support/queue';
import { freePort } from './support/ports';
import { everything } from './support/runs';
import { RunningService, startService, waitFor } from './support/service';
import { PozyUnavailableError } from '../src/pozy/pozy-errors';
import { WorkspaceRegistry } from '../src/workspaces/workspace-registry.service';

const ADMIN = 'admin_workspaces_token';
const KEY_A = 'sk_ws_alpha';
const KEY_B = 'sk_ws_beta';
const B_SECRET = 'beta-secret-given-by-the-operator';
/** B and C share KEY_B: its budget, which the two must never exceed together. */
const SHARED_LIMIT = 300;

interface Answer {
  status: number;
  body: Record<string, unknown>;
  text: string;
}

/**
 * The workspace registry end to end: workspaces added at run time through the admin API, one with a webhook
 * subscription pozy-sync makes in Pozy (PUBLIC_URL), one with a secret the operator gives, one sharing another's API
 * key; each imports itself and then follows its changes, isolated from the others, and is removed at run time.
 */
describe('workspaces added, isolated and removed at run time', () => {
  let db: TestDatabase;
  let sim: PozySimulator;
  let a: PozyWorkspace;
  let b: PozyWorkspace;
  let service: RunningService;
  /** Another replica on the same database: what one adds or removes holds here within seconds. */
  let other: RunningService;
  let publicUrl: string;
  let cSecret: string;

  const call = async (method: string, path: string, body?: unknown, token: string | null = ADMIN, raw?: string): Promise<Answer> => {
    const response = await fetch(`${service.baseUrl}${path}`, {
      method,
      headers: {
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...(body !== undefined || raw ? { 'content-type': 'application/json' } : {}),
      },
      body: raw ?? (body === undefined ? undefined : JSON.stringify(body)),
    });
    const text = await response.text();
    const json = response.headers.get('content-type')?.includes('json') && text;
    return { status: response.status, text, body: json ? (JSON.parse(text) as Record<string, unknown>) : {} };
  };
  const workspaceState = async (id: string) => (await call('GET', `/admin/workspaces/${id}`)).body;
  const rowsOf = async (table: string, workspace: string) =>
    (await service.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE workspace_id = $1`, [workspace])).rows[0].n;
  const mirrorEqualsTruth = async (workspace: PozyWorkspace, id: string) => {
    let last: string[] = [];
    await waitFor(
      `${id}'s mirror to equal its truth`,
      async () => {
        last = await mirrorDifferences(service.pool, workspace.world, everything(workspace.world), id);
        return last.length === 0 ? true : undefined;
      },
      120_000,
      250,
    ).catch((error: Error) => {
      throw new Error(`${error.message}; differences: ${last.slice(0, 5).join('; ')} (${last.length} in all)`);
    });
  };

  /** Beta's events for these posts, one at a time, each timed from its delivery to its read. */
  const betaReads = async (postIds: string[]) => {
    const times: number[] = [];
    for (const postId of postIds) {
      times.push(await timedRead(service.baseUrl, service.pool, 'beta', B_SECRET, postId));
      // Beta's key allows 5 reads a second: spaced, so the budget is not what is timed.
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
    return times;
  };

  beforeAll(async () => {
    db = await createTestDatabase('workspaces');
    sim = await PozySimulator.start({ apiKey: 'sk_sim_unused', seed: 20, timeScale: 10_000, rateLimitPerMinute: 100_000 });
    a = sim.addWorkspace({ apiKey: KEY_A, rateLimitPerMinute: 100_000, seedExisting: { posts: 300, accounts: 16 } });
    b = sim.addWorkspace({ apiKey: KEY_B, rateLimitPerMinute: SHARED_LIMIT, seedExisting: { posts: 200, accounts: 8 } });
    const port = await freePort();
    publicUrl = `http://127.0.0.1:${port}`;
    service = await startService(
      db.url,
      {
        // No workspace in the environment: the service starts with none and waits for POST /admin/workspaces.
        POZY_API_KEY: undefined,
        POZY_WEBHOOK_SECRET: undefined,
        POZY_API_URL: sim.url,
        PUBLIC_URL: publicUrl,
        ADMIN_TOKEN: ADMIN,
        SECRETS_ENCRYPTION_KEY: `k1:${Buffer.alloc(32, 7).toString('base64')}`,
        INITIAL_IMPORT: 'auto',
        IMPORT_CONCURRENCY: '2',
        POZY_TIMEOUT_MS: '2000',
        RECONCILE_CLOCK_SKEW_MS: '0',
        READ_LAG_GRACE_MS: '0',
        RECONCILE_COALESCE_WINDOW_MS: '200',
        WEBHOOK_HEALTH_CHECK_MS: '1000',
      },
      port,
    );
    other = await startService(db.url, {
      ROLE: 'api',
      POZY_API_KEY: undefined,
      POZY_WEBHOOK_SECRET: undefined,
      POZY_API_URL: sim.url,
      ADMIN_TOKEN: ADMIN,
      SECRETS_ENCRYPTION_KEY: `k1:${Buffer.alloc(32, 7).toString('base64')}`,
    });
  }, 60_000);

  afterAll(async () => {
    // The service first: its jobs in flight must not meet a Pozy already gone.
    await other?.close();
    await service?.close();
    await sim?.stop();
    await db?.drop();
  });

  it('starts with no workspace, and refuses a delivery for one', async () => {
    expect((await call('GET', '/admin/workspaces')).body).toEqual({ data: [], nextCursor: null });
    const refused = await call('POST', '/webhooks/pozy', { id: 'e1' });
    expect(refused.status).toBe(404);
    expect(refused.body).toMatchObject({ error: 'unknown_workspace' });
  });

  it('refuses bad input naming the field, and stores nothing', async () => {
    const cases: [unknown, number, string][] = [
      [{ id: 'Not A Slug', apiKey: KEY_A }, 400, 'id'],
      [{ id: '-lead', apiKey: KEY_A }, 400, 'id'],
      [{ id: 'x', apiKey: KEY_A, colour: 'red' }, 400, 'colour'],
      [{ id: 'x', apiKey: KEY_A, apiUrl: 'ftp://example.com' }, 400, 'apiUrl'],
      [{ id: 'x', apiKey: KEY_A, rateLimitPerMinute: 0 }, 400, 'rateLimitPerMinute'],
      [{ id: 'x' }, 400, 'apiKey'],
      // A key Pozy refuses: Pozy's answer is quoted, the key never.
      [{ id: 'x', apiKey: 'sk_nobody_knows_this' }, 400, 'apiKey'],
      // A webhook the service manages gets its own secret.
      [{ id: 'x', apiKey: KEY_A, webhookSecret: 'sixteen-chars-at-least' }, 400, 'webhookSecret'],
    ];
    for (const [body, status, field] of cases) {
      const answer = await call('POST', '/admin/workspaces', body);
      expect({ body, status: answer.status }).toEqual({ body, status });
      expect(answer.text).toContain(field);
      expect(answer.text).not.toContain('sk_nobody_knows_this');
    }
    // Pozy unreachable: 502, nothing stored.
    const unreachable = await call('POST', '/admin/workspaces', { id: 'x', apiKey: KEY_A, apiUrl: 'http://127.0.0.1:9' });
    expect(unreachable.status).toBe(502);
    expect(unreachable.body).toMatchObject({ error: 'pozy_unreachable' });
    expect((await call('POST', '/admin/workspaces', undefined, ADMIN, '{"id":')).status).toBe(400);
    expect((await call('POST', '/admin/workspaces', { id: 'x', apiKey: KEY_A }, null)).status).toBe(401);
    expect((await call('POST', '/admin/workspaces', { id: 'x', apiKey: KEY_A }, 'wrong-token')).status).toBe(403);
    expect((await call('POST', '/admin/workspaces', { id: 'x', apiKey: 'k'.repeat(2 * 1024 * 1024) })).status).toBe(413);
    expect((await service.pool.query('SELECT id FROM workspace')).rows).toEqual([]);
  });

  it('adds three workspaces: a managed webhook, a given secret, a shared key', async () => {
    const alpha = await call('POST', '/admin/workspaces', { id: 'alpha', apiKey: KEY_A, name: 'Alpha', apiUrl: sim.url });
    expect(alpha.status).toBe(201);
    expect(alpha.body).toMatchObject({
      id: 'alpha',
      name: 'Alpha',
      source: 'api',
      state: 'active',
      webhook: { url: `${publicUrl}/webhooks/pozy/alpha`, managed: true, test: { delivered: true } },
    });
    // The subscription pozy-sync made in Pozy points at alpha's path, and Pozy's test event came through it.
    const [subscription] = a.subscriptions();
    expect(subscription).toMatchObject({ url: `${publicUrl}/webhooks/pozy/alpha`, isActive: true });
    expect((alpha.body.webhook as { subscriptionId: string }).subscriptionId).toBe(subscription._id);
    expect(await rowsOf('pozy_event', 'alpha')).toBe(1);

    const beta = await call('POST', '/admin/workspaces', {
      id: 'beta',
      apiKey: KEY_B,
      manageWebhook: false,
      webhookSecret: B_SECRET,
      rateLimitPerMinute: SHARED_LIMIT,
    });
    expect(beta.status).toBe(201);
    expect(beta.body.webhook).toMatchObject({ managed: false, url: `${publicUrl}/webhooks/pozy/beta` });
    expect(beta.body.webhook).not.toHaveProperty('secret');
    b.addSubscription({ url: `${publicUrl}/webhooks/pozy/beta`, secret: B_SECRET });
    // The other replica receives for beta within seconds, with beta's secret.
    const testEvent = { id: 'other-1', event: 'webhook.test', test: true, timestamp: new Date().toISOString() };
    await waitFor(
      'the other replica to receive for beta',
      async () => ((await deliver(other.baseUrl, testEvent, { secret: B_SECRET, path: '/webhooks/pozy/beta' })).status === 200 ? true : undefined),
      10_000,
      100,
    );

    const gamma = await call('POST', '/admin/workspaces', { id: 'gamma', apiKey: KEY_B, manageWebhook: false, rateLimitPerMinute: SHARED_LIMIT });
    expect(gamma.status).toBe(201);
    // Generated, and answered this once.
    cSecret = (gamma.body.webhook as { secret: string }).secret;
    expect(cSecret).toMatch(/^pzs_/);
    b.addSubscription({ url: `${publicUrl}/webhooks/pozy/gamma`, secret: cSecret });

    expect((await call('POST', '/admin/workspaces', { id: 'beta', apiKey: KEY_B })).status).toBe(409);
    // Neither the keys nor the secrets are anywhere in what the API answers, nor stored as they are.
    const listed = await call('GET', '/admin/workspaces?limit=2');
    expect(listed.body.data).toHaveLength(2);
    const rest = await call('GET', `/admin/workspaces?limit=2&cursor=${listed.body.nextCursor as string}`);
    expect((rest.body.data as { id: string }[]).map((w) => w.id)).toEqual(['gamma']);
    const stored = JSON.stringify((await service.pool.query('SELECT * FROM workspace')).rows);
    for (const secret of [KEY_A, KEY_B, B_SECRET, cSecret]) {
      expect(listed.text + rest.text).not.toContain(secret);
      expect(stored).not.toContain(secret);
    }
  }, 60_000);

  it('imports each workspace, then follows its changes: the mirror equals each truth', async () => {
    for (const id of ['alpha', 'beta', 'gamma']) {
      await waitFor(
        `${id}'s import`,
        async () => ((await workspaceState(id)).import as { status: string }).status === 'succeeded' || undefined,
        120_000,
        250,
      );
    }
    for (let i = 0; i < 40; i += 1) {
      a.world.randomStep();
      b.world.randomStep();
    }
    // An edit in Pozy sends no event: a sweep of each workspace finds those (and runs with that workspace's key).
    for (const id of ['alpha', 'beta', 'gamma']) {
      const sweep = await call('POST', `/admin/workspaces/${id}/sweep`);
      expect(sweep.status).toBe(202);
      await waitFor(
        `${id}'s sweep`,
        async () => ((await workspaceState(id)).lastSweep as { status?: string } | null)?.status === 'succeeded' || undefined,
        120_000,
        250,
      );
    }
    await mirrorEqualsTruth(a, 'alpha');
    await mirrorEqualsTruth(b, 'beta');
    await mirrorEqualsTruth(b, 'gamma');
    expect(await rowsOf('post', 'alpha')).toBeGreaterThanOrEqual(300);
    // The two sharing a key spent one budget: never more than its limit in any window, together.
    expect(b.mostAcceptedInWindow()).toBeLessThanOrEqual(SHARED_LIMIT);
    const detail = await workspaceState('alpha');
    // Its key's budget: POZY_RATE_LIMIT_PER_MINUTE, as none was given.
    expect(detail).toMatchObject({ budget: { limit: 600 }, reads: { pending: 0 }, import: { status: 'succeeded' } });
  }, 240_000);

  it("keeps each workspace's data to its readers, and its path to its secret", async () => {
    const token = await call('POST', '/admin/tokens', { name: 'alpha reader', workspaces: ['alpha'] });
    const reader = token.body.token as string;
    const betaPost = (await service.pool.query<{ id: string }>("SELECT id FROM post WHERE workspace_id = 'beta' AND deleted_at IS NULL LIMIT 1"))
      .rows[0].id;
    const posts = await call('GET', '/posts?limit=500', undefined, reader);
    expect(new Set((posts.body.data as { workspaceId: string }[]).map((p) => p.workspaceId))).toEqual(new Set(['alpha']));
    expect((await call('GET', `/posts/${betaPost}`, undefined, reader)).status).toBe(404);
    expect((await call('GET', `/posts?workspace=beta`, undefined, reader)).body.data).toEqual([]);
    const accounts = await call('GET', '/accounts?limit=500', undefined, reader);
    expect(new Set((accounts.body.data as { workspaceId: string }[]).map((x) => x.workspaceId))).toEqual(new Set(['alpha']));
    const changes = await call('GET', '/changes?limit=1000', undefined, reader);
    expect(new Set((changes.body.data as { workspaceId: string }[]).map((x) => x.workspaceId))).toEqual(new Set(['alpha']));
    const status = await call('GET', '/sync/status', undefined, reader);
    expect(status.text).not.toContain('beta');
    // No key or secret anywhere an operator or a scraper looks.
    const views = [
      await call('GET', '/sync/status'),
      await call('GET', '/metrics'),
      await call('GET', '/', undefined, ADMIN),
      await call('GET', '/docs-json'),
    ];
    for (const secret of [KEY_A, KEY_B, B_SECRET, cSecret]) for (const view of views) expect(view.text).not.toContain(secret);

    // Beta's secret does not sign alpha's path; alpha's does.
    const forged = postEvent(betaPost, 'post.published', { id: 'forged-1' });
    const send = async (path: string, secret: string) => deliver(service.baseUrl, forged, { secret, path });
    expect((await send('/webhooks/pozy/alpha', B_SECRET)).status).toBe(401);
    expect((await send('/webhooks/pozy/gamma', B_SECRET)).status).toBe(401);
    expect((await send('/webhooks/pozy/beta', B_SECRET)).status).toBe(200);
    expect((await send('/webhooks/pozy/nobody', B_SECRET)).status).toBe(404);
    expect((await service.pool.query("SELECT workspace_id FROM pozy_event WHERE id = 'forged-1'")).rows).toEqual([{ workspace_id: 'beta' }]);
  });

  it("rotates a workspace's secret with an overlap, and pauses and resumes it", async () => {
    const rotated = await call('PATCH', '/admin/workspaces/gamma', { rotateWebhookSecret: true, overlapHours: 1 });
    expect(rotated.status).toBe(200);
    const next = (rotated.body.webhook as { secret: string }).secret;
    expect(next).not.toBe(cSecret);
    const send = (id: string, secret: string) =>
      deliver(
        service.baseUrl,
        { id, event: 'webhook.test', test: true, timestamp: new Date().toISOString() },
        { secret, path: '/webhooks/pozy/gamma' },
      );
    // Both while the overlap lasts.
    expect((await send('rot-1', cSecret)).status).toBe(200);
    expect((await send('rot-2', next)).status).toBe(200);
    const ended = await call('PATCH', '/admin/workspaces/gamma', { webhookSecret: 'the-operators-own-secret', overlapHours: 0 });
    expect(ended.status).toBe(200);
    expect((await send('rot-3', next)).status).toBe(401);
    expect((await send('rot-4', 'the-operators-own-secret')).status).toBe(200);
    expect((await call('PATCH', '/admin/workspaces/gamma', { apiKey: 'sk_refused_by_pozy' })).status).toBe(400);
    expect((await call('PATCH', '/admin/workspaces/gamma', { paused: true })).body).toMatchObject({ state: 'paused' });
    expect((await call('PATCH', '/admin/workspaces/gamma', { paused: false })).body).toMatchObject({ state: 'active' });
  });

  it('turns a managed subscription Pozy switched off on again, backfills the gap, and tells the ops endpoint once', async () => {
    const ops = await TestSubscriber.start('/ops');
    const created = await call('POST', '/admin/subscriptions', { url: ops.url, eventTypes: ['ops.webhook.disabled_in_pozy'] });
    expect(created.status).toBe(201);
    const [subscription] = a.subscriptions();
    a.setSubscriptionActive(subscription._id, false);
    let seen = '';
    const health = await waitFor(
      "alpha's subscription to be on again",
      async () => {
        const state = await workspaceState('alpha');
        const webhook = state.webhook as { health: { reenabledAt?: string; isActive?: boolean } | null };
        const stored = (await service.pool.query("SELECT webhook_health FROM workspace WHERE id = 'alpha'")).rows[0] as unknown;
        seen = `answered ${JSON.stringify(webhook.health)}, stored ${JSON.stringify(stored)}, in Pozy ${JSON.stringify(a.subscription(subscription._id))}`;
        return webhook.health?.reenabledAt && a.subscription(subscription._id)?.isActive ? webhook.health : undefined;
      },
      // A check pass reads every workspace's subscriptions in Pozy, each within POZY_TIMEOUT_MS and its retries: on a
      // machine busy with other suites, more than one pass.
      90_000,
      200,
    ).catch((error: Error) => {
      throw new Error(`${error.message}; last seen: ${seen}`);
    });
    expect(health).toMatchObject({ isActive: true, reenabledBecause: expect.stringContaining('inactive') });
    const told = await waitFor('the ops endpoint told', async () => (ops.received.length > 0 ? ops.received : undefined));
    expect(told.map((r) => [r.json.type, r.json.data.workspaceId])).toEqual([['ops.webhook.disabled_in_pozy', 'alpha']]);
    expect(told[0].json.data).toMatchObject({ pozySubscriptionId: subscription._id, reenabledAt: health.reenabledAt });
    await ops.close();
    await waitFor(
      "alpha's backfill",
      async () => ((await workspaceState('alpha')).lastBackfill as { status?: string } | null)?.status === 'succeeded' || undefined,
      60_000,
      200,
    );
  }, 180_000);

  it('finishes turning a subscription on when Pozy applied the request but its answer was lost', async () => {
    const before = (await workspaceState('alpha')) as { webhook: { health: { reenabledAt: string } }; lastBackfill: { id: string } };
    // Pozy turns it on, and the answer never arrives (a timeout, a reset connection): the check cannot know it worked.
    const client = service.app.get(WorkspaceRegistry).get('alpha')!.client;
    const put = client.updateSubscription.bind(client);
    client.updateSubscription = async (id, change) => {
      await put(id, change);
      throw new PozyUnavailableError('PUT /v1/webhooks/settings: the answer was lost', true);
    };
    const [subscription] = a.subscriptions();
    try {
      a.setSubscriptionActive(subscription._id, false);
      const health = await waitFor(
        'the repair finished by a later check',
        async () => {
          const { webhook } = (await workspaceState('alpha')) as { webhook: { health: { reenabledAt?: string; turningOn?: unknown } } };
          return webhook.health.reenabledAt !== before.webhook.health.reenabledAt ? webhook.health : undefined;
        },
        90_000,
        200,
      );
      expect(health).toMatchObject({ isActive: true, reenabledBecause: expect.stringContaining('inactive') });
      expect(health).not.toHaveProperty('turningOn');
      expect(a.subscription(subscription._id)?.isActive).toBe(true);
      const backfill = await waitFor(
        "alpha's second backfill",
        async () => {
          const last = (await workspaceState('alpha')).lastBackfill as { id: string; status: string };
          return last.id !== before.lastBackfill.id && last.status === 'succeeded' ? last : undefined;
        },
        60_000,
        200,
      );
      expect(backfill.id).not.toBe(before.lastBackfill.id);
    } finally {
      client.updateSubscription = put;
    }
  }, 180_000);

  it("removes a workspace: its rows go, its managed webhook in Pozy too; keepData keeps another's rows", async () => {
    // Alpha holds 50,000 posts more (inserted with SQL: what a large workspace leaves to delete).
    await service.pool.query(
      `INSERT INTO post (workspace_id, id, status, content, platforms, account_ids, platform_names, pozy_created_at, pozy_updated_at,
                         synced_at, read_started_at, read_id, sequence)
       SELECT 'alpha', 'f' || lpad(to_hex(i), 23, '0'), 'published', 'Bulk #' || i, '[]'::jsonb, ARRAY[]::text[], ARRAY['x'],
              now(), now(), now(), now(), '00000000-0000-4000-8000-000000000000', 1
         FROM generate_series(1, 50000) i`,
    );
    const betaPosts = b.world.listPosts().map((p) => p._id);
    const quiet = await betaReads(betaPosts.slice(0, 5));
    const removed = await call('DELETE', '/admin/workspaces/alpha');
    expect(removed.status).toBe(202);
    expect(removed.body).toMatchObject({ runId: expect.any(String), state: 'removing' });
    expect(a.subscriptions()).toEqual([]);
    // Refused at once on this replica, within seconds on the other.
    expect((await call('POST', '/webhooks/pozy/alpha', { id: 'late' })).status).toBe(404);
    await waitFor(
      'the other replica to refuse alpha',
      async () =>
        (await fetch(`${other.baseUrl}/webhooks/pozy/alpha`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } }))
          .status === 404
          ? true
          : undefined,
      10_000,
      100,
    );
    // Beta's reads while alpha's rows are deleted beside them.
    const during = await betaReads(betaPosts.slice(5, 10));
    const leftWhileMeasured = await rowsOf('post', 'alpha');
    await waitFor('alpha to be gone', async () => ((await call('GET', '/admin/workspaces/alpha')).status === 404 ? true : undefined), 120_000, 200);
    process.stdout.write(
      `removal of 50,000+ posts: beta's event to its read ${during.join(', ')} ms during it (${leftWhileMeasured} of alpha's posts still to delete ` +
        `after), ${quiet.join(', ')} ms before\n`,
    );
    for (const table of ['post', 'account', 'pozy_event', 'change', 'sweep_run']) expect(await rowsOf(table, 'alpha')).toBe(0);

    const posts = await rowsOf('post', 'gamma');
    const detached = await call('DELETE', '/admin/workspaces/gamma?keepData=true');
    expect(detached.body).toMatchObject({ state: 'detached' });
    expect(await rowsOf('post', 'gamma')).toBe(posts);
    expect((await call('GET', '/posts?workspace=gamma&limit=1')).body.data).toHaveLength(1);
    expect((await call('POST', '/webhooks/pozy/gamma', { id: 'late' })).status).toBe(404);
    // Beta goes on.
    const before = await rowsOf('pozy_event', 'beta');
    b.world.randomStep();
    await waitFor('beta to receive again', async () => ((await rowsOf('pozy_event', 'beta')) > before ? true : undefined), 30_000, 100);
  }, 240_000);
});

describe('a workspace added without SECRETS_ENCRYPTION_KEY', () => {
  let db: TestDatabase;
  let service: RunningService;

  beforeAll(async () => {
    db = await createTestDatabase('workspaces_no_key');
    service = await startService(db.url, { POZY_API_KEY: undefined, POZY_WEBHOOK_SECRET: undefined, ADMIN_TOKEN: ADMIN, ROLE: 'api' });
  });

  afterAll(async () => {
    await service?.close();
    await db?.drop();
  });

  it('is refused with a message naming the variable, and nothing is stored', async () => {
    const response = await fetch(`${service.baseUrl}/admin/workspaces`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'acme', apiKey: KEY_A }),
    });
    expect(response.status).toBe(409);
    expect(await response.json()).toMatchObject({ error: 'encryption_key_required', message: expect.stringContaining('SECRETS_ENCRYPTION_KEY') });
    expect((await service.pool.query('SELECT id FROM workspace')).rows).toEqual([]);
  });
});
