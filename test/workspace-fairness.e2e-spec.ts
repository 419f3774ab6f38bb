import { randomBytes } from 'node:crypto';
import { PozySimulator } from '../simulator/simulator';
import type { PozyWorkspace } from '../simulator/workspace';
import { createTestDatabase, TestDatabase } from './support/database';
import { deliver, postEvent } from './support/pozy-events';
import { timedRead } from './support/queue';
import { RunningService, startService, waitFor } from './support/service';

const ADMIN = 'admin_fairness_token';
const SECRET_A = 'alpha-secret-for-the-burst';
const SECRET_B = 'beta-secret-single-events';
const BURST = 10_000;
/** Pozy's answers to A take this long: A's burst then holds the worker pool for many seconds. */
const A_LATENCY_MS = 20;
/**
 * Each wait's deadline. Alone the suite takes 20 s; in a full CI run beside the million-row suites, one of B's reads
 * once waited over 60 s (every service on the machine stalled then: a 300 ms Pozy timeout elsewhere fired after 18 s).
 * What is asserted never depends on how long a wait took.
 */
const DEADLINE_MS = 240_000;

/** A service with no workspace of its own, whose workspaces are added through the API, reading as soon as asked. */
const serviceEnvironment = (sim: PozySimulator): Record<string, string | undefined> => ({
  POZY_API_KEY: undefined,
  POZY_WEBHOOK_SECRET: undefined,
  POZY_API_URL: sim.url,
  POZY_RATE_LIMIT_PER_MINUTE: '100000',
  ADMIN_TOKEN: ADMIN,
  SECRETS_ENCRYPTION_KEY: `k1:${Buffer.alloc(32, 9).toString('base64')}`,
  RECONCILE_CLOCK_SKEW_MS: '0',
  READ_LAG_GRACE_MS: '0',
  RECONCILE_COALESCE_WINDOW_MS: '0',
});

const percentile = (values: number[], p: number) =>
  [...values].sort((x, y) => x - y)[Math.min(values.length - 1, Math.floor((values.length * p) / 100))];

/**
 * Fairness between workspaces: while a burst of 10,000 events into A keeps the worker pool busy, B's single events
 * are read without waiting behind A's queue (reconcile-dispatcher.service.ts: BurstPriority). The figures are
 * printed; what is asserted is that B's reads all happened while A's burst still had thousands of reads waiting.
 */
describe('a burst in one workspace beside single events in another', () => {
  let db: TestDatabase;
  let sim: PozySimulator;
  let a: PozyWorkspace;
  let b: PozyWorkspace;
  let service: RunningService;

  const add = (body: Record<string, unknown>) =>
    fetch(`${service.baseUrl}/admin/workspaces`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  const pendingOfA = async () =>
    (
      await service.pool.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM reconcile_request WHERE workspace_id = 'alpha' AND (due_at IS NOT NULL OR last_read_at IS NULL)",
      )
    ).rows[0].n;

  /** B's events, one at a time, each timed from its delivery to its read; A's reads waiting at each. */
  const measureB = async (from: number, count: number) => {
    const latencies: number[] = [];
    const pendingAtEach: number[] = [];
    const posts = b.world.listPosts().slice(from, from + count);
    for (const post of posts) {
      latencies.push(await timedRead(service.baseUrl, service.pool, 'beta', SECRET_B, post._id, DEADLINE_MS));
      pendingAtEach.push(await pendingOfA());
    }
    return { latencies, pendingAtEach, posts };
  };

  beforeAll(async () => {
    db = await createTestDatabase('workspace_fairness');
    sim = await PozySimulator.start({ apiKey: 'sk_sim_unused', seed: 21, timeScale: 10_000, rateLimitPerMinute: 1_000_000 });
    a = sim.addWorkspace({ apiKey: 'sk_fair_a', rateLimitPerMinute: 1_000_000, faults: { apiLatencyMs: A_LATENCY_MS } });
    b = sim.addWorkspace({ apiKey: 'sk_fair_b', rateLimitPerMinute: 1_000_000, seedExisting: { posts: 50, accounts: 4 } });
    service = await startService(db.url, serviceEnvironment(sim));
    expect((await add({ id: 'alpha', apiKey: 'sk_fair_a', manageWebhook: false, webhookSecret: SECRET_A })).status).toBe(201);
    expect((await add({ id: 'beta', apiKey: 'sk_fair_b', manageWebhook: false, webhookSecret: SECRET_B })).status).toBe(201);
  }, 60_000);

  afterAll(async () => {
    // The service first: its jobs in flight must not meet a Pozy already gone.
    await service?.close();
    await sim?.stop();
    await db?.drop();
  });

  it("reads B's events promptly while A's burst waits", async () => {
    // A's burst: 10,000 posts Pozy does not know, each one read (a 404, a tombstone) at A_LATENCY_MS a read.
    let sent = 0;
    const burst = Array.from({ length: BURST }, () => randomBytes(12).toString('hex'));
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        while (sent < burst.length) {
          const id = burst[sent++];
          expect((await deliver(service.baseUrl, postEvent(id), { secret: SECRET_A, path: '/webhooks/pozy/alpha' })).status).toBe(200);
        }
      }),
    );
    await waitFor('A to be reading', async () => ((await pendingOfA()) < BURST ? true : undefined), DEADLINE_MS, 50);

    const { latencies, pendingAtEach, posts } = await measureB(0, 10);
    process.stdout.write(
      `fairness: B's event to its read during A's ${BURST}-event burst: p50 ${percentile(latencies, 50)} ms, max ${Math.max(...latencies)} ms ` +
        `(A's reads still waiting meanwhile: ${Math.min(...pendingAtEach)} to ${Math.max(...pendingAtEach)})\n`,
    );
    // Every one of B's reads happened while A's burst still had thousands of reads to go: B never waited behind it.
    expect(Math.min(...pendingAtEach)).toBeGreaterThan(1_000);
    const mirrored = await service.pool.query("SELECT id FROM post WHERE workspace_id = 'beta' AND id = ANY($1)", [posts.map((p) => p._id)]);
    expect(mirrored.rowCount).toBe(posts.length);
  }, 1_200_000);

  it("reads B's events while A's key is paused by a 429 storm", async () => {
    a.setFaults({ api429Rate: 1, api429RetryAfter: '30' });
    const pausedUntil = async () =>
      (
        (await (await fetch(`${service.baseUrl}/admin/workspaces/alpha`, { headers: { authorization: `Bearer ${ADMIN}` } })).json()) as {
          budget: { pausedUntil: string | null };
        }
      ).budget.pausedUntil;
    await waitFor("A's key to be paused", async () => ((await pausedUntil()) ? true : undefined), DEADLINE_MS, 50);
    const { latencies, pendingAtEach } = await measureB(10, 10);
    const stillPaused = await pausedUntil();
    process.stdout.write(
      `429 storm: B's event to its read while A's key is paused: p50 ${percentile(latencies, 50)} ms, max ${Math.max(...latencies)} ms ` +
        `(A's reads waiting: ${Math.min(...pendingAtEach)} to ${Math.max(...pendingAtEach)})\n`,
    );
    // A's key stayed paused the whole time (its reads wait, postponed), and B's were all read meanwhile.
    expect(stillPaused).not.toBeNull();
    // The status names the workspace furthest behind, in bounded size.
    const status = (await (await fetch(`${service.baseUrl}/sync/status`, { headers: { authorization: `Bearer ${ADMIN}` } })).json()) as {
      workspaces: { furthestBehind: { id: string; oldestPendingAgeMs: number }[] };
    };
    expect(status.workspaces.furthestBehind[0]).toEqual({ id: 'alpha', oldestPendingAgeMs: expect.any(Number) });
    expect(Math.min(...pendingAtEach)).toBeGreaterThan(100);
    a.setFaults({ api429Rate: 0 });
  }, 1_200_000);
});

/**
 * Fairness beside an import: while workspace C imports 100,000 posts (its list pages in the budget's lowest lane, its
 * writes on the shared database), B's single events are read promptly. The figures are printed; what is asserted is
 * that every one of B's reads happened while C's import was still running, and that B's mirror holds each post.
 */
describe('an import of 100,000 posts in one workspace beside single events in another', () => {
  const IMPORTED = 100_000;
  let db: TestDatabase;
  let sim: PozySimulator;
  let b: PozyWorkspace;
  let service: RunningService;

  const importOfC = async () =>
    (
      await service.pool.query<{ status: string; posts_done: number }>(
        "SELECT status, posts_done FROM sweep_run WHERE workspace_id = 'gamma' AND kind = 'import' ORDER BY started_at DESC LIMIT 1",
      )
    ).rows[0];

  beforeAll(async () => {
    db = await createTestDatabase('workspace_fairness_import');
    sim = await PozySimulator.start({ apiKey: 'sk_sim_unused', seed: 22, timeScale: 10_000, rateLimitPerMinute: 1_000_000 });
    sim.addWorkspace({ apiKey: 'sk_fair_c', rateLimitPerMinute: 1_000_000, seedExisting: { posts: IMPORTED, accounts: 20 } });
    b = sim.addWorkspace({ apiKey: 'sk_fair_b', rateLimitPerMinute: 1_000_000, seedExisting: { posts: 50, accounts: 4 } });
    service = await startService(db.url, { ...serviceEnvironment(sim), INITIAL_IMPORT: 'auto' });
    const add = (body: Record<string, unknown>) =>
      fetch(`${service.baseUrl}/admin/workspaces`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    expect((await add({ id: 'beta', apiKey: 'sk_fair_b', manageWebhook: false, webhookSecret: SECRET_B })).status).toBe(201);
    // B's own import (50 posts) done first, so that what follows is B's events beside C's import alone.
    await waitFor(
      "B's import",
      async () =>
        (await service.pool.query("SELECT 1 FROM sweep_run WHERE workspace_id = 'beta' AND status = 'succeeded'")).rowCount ? true : undefined,
      DEADLINE_MS,
      50,
    );
    expect((await add({ id: 'gamma', apiKey: 'sk_fair_c', manageWebhook: false, webhookSecret: 'gamma-secret-never-used' })).status).toBe(201);
  }, 2 * DEADLINE_MS);

  afterAll(async () => {
    await service?.close();
    await sim?.stop();
    await db?.drop();
  });

  it("reads B's events promptly while C imports", async () => {
    await waitFor("C's import to be writing", async () => ((await importOfC())?.posts_done > 0 ? true : undefined), DEADLINE_MS, 50);
    const latencies: number[] = [];
    const importAtEach: Array<{ status: string; posts_done: number }> = [];
    const posts = b.world.listPosts().slice(0, 10);
    for (const post of posts) {
      latencies.push(await timedRead(service.baseUrl, service.pool, 'beta', SECRET_B, post._id, DEADLINE_MS));
      importAtEach.push(await importOfC());
    }
    const done = importAtEach.map((run) => run.posts_done);
    process.stdout.write(
      `fairness: B's event to its read during C's import of ${IMPORTED} posts: p50 ${percentile(latencies, 50)} ms, ` +
        `max ${Math.max(...latencies)} ms (C's posts written meanwhile: ${Math.min(...done)} to ${Math.max(...done)})\n`,
    );
    // Every one of B's reads was made while C's import was still under way: B never waited for it to end.
    expect(importAtEach.filter((run) => run.status !== 'running')).toEqual([]);
    expect(Math.max(...done)).toBeLessThan(IMPORTED);
    const mirrored = await service.pool.query("SELECT id FROM post WHERE workspace_id = 'beta' AND id = ANY($1)", [posts.map((p) => p._id)]);
    expect(mirrored.rowCount).toBe(posts.length);
  }, 1_200_000);
});
