import { Rng } from '../simulator/faults';
import { mirrorDifferences } from '../simulator/mirror-check';
import { createTestDatabase, TestDatabase } from './support/database';
import { Harness, settled, startHarness } from './support/harness';
import { metricTotal, parseMetrics } from './support/metrics';
import { everything, importEnded, latestRun } from './support/runs';
import { RunningService, startService, waitFor } from './support/service';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A test-sized Pozy minute: the same rules over a shorter window. */
const WINDOW_MS = 2_000;

describe('one Pozy budget for two replicas', () => {
  let db: TestDatabase;
  let harness: Harness;
  let second: RunningService;
  const LIMIT = 40;
  // Long enough beside the half second the budget counts beyond its window (a grant reaches Pozy a moment later).
  const WINDOW_MS = 4_000;

  beforeAll(async () => {
    db = await createTestDatabase('budget_replicas');
    const env = {
      INITIAL_IMPORT: 'auto',
      POZY_RATE_LIMIT_PER_MINUTE: String(LIMIT),
      POZY_RATE_LIMIT_WINDOW_MS: String(WINDOW_MS),
      RECONCILE_COALESCE_WINDOW_MS: '0',
    };
    harness = await startHarness(db.url, {
      env,
      // Pozy allows exactly the budget: a replica that overspent would meet 429s.
      simulator: { rateLimitPerMinute: LIMIT, rateLimitWindowMs: WINDOW_MS },
      before: (sim) => sim.world.seedExisting({ posts: 2_000, accounts: 60 }),
    });
    second = await startService(db.url, { ...env, POZY_API_URL: harness.sim.url, POZY_API_KEY: harness.sim.apiKey });
  }, 60_000);

  afterAll(async () => {
    await second?.close();
    await harness?.close();
    await db?.drop();
  });

  it('keeps both replicas together under the limit in every window, while both read for webhooks and one imports', async () => {
    const { sim, service } = harness;
    // Webhooks go to both replicas in turn.
    let turn = 0;
    sim.setWebhookUrl(`${service.baseUrl}/webhooks/pozy`);
    const rng = new Rng(21);
    const started = Date.now();
    // Far more reads wanted than the budget allows: it is the budget that sets the pace. At least 12 s, and on a slow
    // machine until the limit has been reached in some window (the test is not to pass for want of trying), up to 60 s.
    const reachedLimit = () => sim.mostAcceptedInWindow(WINDOW_MS) >= LIMIT * 0.75;
    while (Date.now() - started < 12_000 || (!reachedLimit() && Date.now() - started < 60_000)) {
      sim.setWebhookUrl(`${(turn++ % 2 === 0 ? service : second).baseUrl}/webhooks/pozy`);
      sim.world.randomStep(rng, { silent: false });
      await sleep(10);
    }
    const stats = sim.stats().api;
    const accepted = sim.acceptedAt();
    const most = sim.mostAcceptedInWindow(WINDOW_MS);
    const readsByReplica = await Promise.all(
      [service, second].map(async (s) => {
        const metrics = parseMetrics(await (await fetch(`${s.baseUrl}/metrics`)).text());
        return metricTotal(metrics, 'pozy_sync_pozy_api_requests_total');
      }),
    );
    process.stdout.write(
      `budget, two replicas: ${accepted.length} requests in ${Math.round((Date.now() - started) / 1000)} s, at most ${most} in any ` +
        `${WINDOW_MS} ms window (limit ${LIMIT}); by replica ${readsByReplica.join(' + ')}; 429s for the limit: ${stats.rateLimited}\n`,
    );
    expect(most).toBeLessThanOrEqual(LIMIT);
    expect(stats.rateLimited).toBe(0);
    // The limit was reached, by both replicas: the test is not passing for want of trying.
    expect(most).toBeGreaterThanOrEqual(LIMIT * 0.75);
    expect(Math.min(...readsByReplica)).toBeGreaterThan(0);
  }, 120_000);
});

describe("another client using most of Pozy's advertised limit", () => {
  let db: TestDatabase;
  let harness: Harness;
  const LIMIT = 60;
  // As above: the half second counted beyond the window costs a tenth of this one, not a fifth of a 2 s one, so what
  // the service may use alone stays well above the bar on a loaded machine too.
  const WINDOW_MS = 4_000;

  beforeAll(async () => {
    db = await createTestDatabase('budget_others');
    harness = await startHarness(db.url, {
      env: { POZY_RATE_LIMIT_PER_MINUTE: String(LIMIT), POZY_RATE_LIMIT_WINDOW_MS: String(WINDOW_MS), RECONCILE_COALESCE_WINDOW_MS: '0' },
      simulator: { rateLimitPerMinute: LIMIT, rateLimitWindowMs: WINDOW_MS },
      before: (sim) => sim.world.seedExisting({ posts: 500, accounts: 30 }),
    });
  }, 60_000);

  afterAll(async () => {
    await harness?.close();
    await db?.drop();
  });

  it('makes pozy-sync slow down and leave them the reserve', async () => {
    const { sim } = harness;
    const inWindow = (from: number, to: number) => sim.acceptedAt().filter((t) => t >= from && t < to).length;
    // Changes all along, far more reads wanted than the budget allows.
    const rng = new Rng(8);
    let changing = true;
    let alone = 0;
    let shared = 0;
    let rateLimitedAfter = 0;
    const changes = (async () => {
      while (changing) {
        sim.world.randomStep(rng, { silent: false });
        await sleep(8);
      }
    })();
    // What the service believed meanwhile (its budget gauges), for the log when a figure disappoints.
    const believedAlone = { others: 0, effective: LIMIT };
    const budgetFigure = async (figure: string) =>
      parseMetrics(await (await fetch(`${harness.service.baseUrl}/metrics`)).text()).get(`pozy_sync_pozy_budget_requests{figure="${figure}"}`) ?? 0;
    try {
      await sleep(WINDOW_MS);
      const aloneFrom = Date.now();
      while (Date.now() - aloneFrom < 2 * WINDOW_MS) {
        believedAlone.others = Math.max(believedAlone.others, await budgetFigure('others'));
        believedAlone.effective = Math.min(believedAlone.effective, await budgetFigure('effective'));
        await sleep(200);
      }
      alone = inWindow(aloneFrom, Date.now()) / 2;
      const rateLimitedBefore = sim.stats().api.rateLimited;

      // The team's own product now spends two thirds of the key's limit.
      sim.setOtherClientPerMinute(40);
      await sleep(2 * WINDOW_MS);
      const sharedFrom = Date.now();
      await sleep(2 * WINDOW_MS);
      shared = inWindow(sharedFrom, Date.now()) / 2;
      rateLimitedAfter = sim.stats().api.rateLimited - rateLimitedBefore;
    } finally {
      changing = false;
      await changes;
    }

    process.stdout.write(
      `budget with another client: ${alone} requests a window alone (it saw others using at most ${believedAlone.others}, ` +
        `an effective limit down to ${believedAlone.effective}), ${shared} beside a client spending 40 of ${LIMIT}; 429s meanwhile: ${rateLimitedAfter}\n`,
    );
    // 60 less a 20 % reserve less the other's 40 leaves 8 a window.
    expect(shared).toBeLessThanOrEqual(12);
    // Alone, its budget allowed it far more, and it used more: the slowdown came from the other client, not from a budget
    // set low. How much it used depends on how fast this machine turns events into reads (55 of 60 in a quiet run, 25 on
    // a machine with a load of 7 on its 2 cores), so the bar on use is only the contrast.
    expect(believedAlone.effective).toBeGreaterThan(2 * 12);
    expect(alone).toBeGreaterThan(12);
    expect(rateLimitedAfter).toBeLessThanOrEqual(2);
  }, 60_000);
});

describe('the realtime lane during an import under a tight budget', () => {
  let db: TestDatabase;
  let harness: Harness;

  beforeAll(async () => {
    db = await createTestDatabase('budget_lanes');
    harness = await startHarness(db.url, {
      // Twenty requests a second: the import alone would take all of them.
      env: { INITIAL_IMPORT: 'auto', POZY_RATE_LIMIT_PER_MINUTE: '40', POZY_RATE_LIMIT_WINDOW_MS: String(WINDOW_MS) },
      simulator: { rateLimitPerMinute: 40, rateLimitWindowMs: WINDOW_MS },
      before: (sim) => sim.world.seedExisting({ posts: 30_000, accounts: 30 }),
    });
  }, 60_000);

  afterAll(async () => {
    await harness?.close();
    await db?.drop();
  });

  it('reflects a webhook within a few seconds, and the import still finishes', async () => {
    const { sim, service } = harness;
    await waitFor('the import to be under way', async () => (((await latestRun(service.pool))?.posts_done ?? 0) > 2_000 ? true : undefined), 30_000);
    const world = sim.world;
    const post = world.listPosts().find((p) => p.status === 'scheduled')!;
    const changedAt = Date.now();
    world.publishPost(post._id);
    const status = world.getPost(post._id)!.status;
    await waitFor(
      'the published post in the mirror',
      async () => {
        const { rows } = await service.pool.query<{ status: string }>('SELECT status FROM post WHERE id = $1', [post._id]);
        return rows[0]?.status === status ? true : undefined;
      },
      60_000,
    );
    const reflectedMs = Date.now() - changedAt;
    const during = await latestRun(service.pool);

    // About 20 s on a quiet machine; a CI run with a 1,000,000-row suite beside it took over 60 s.
    await waitFor('the import to finish', async () => ((await latestRun(service.pool))?.status === 'succeeded' ? true : undefined), 180_000);
    await settled(harness);
    process.stdout.write(
      `lanes: a webhook reflected ${reflectedMs} ms after the change while the import held the budget (it was at ${during?.posts_done} posts)\n`,
    );
    // Reflected while the import still held the budget, not behind it; within a few seconds on a quiet machine (the
    // bound allows for a CI run that makes everything three times slower).
    expect(during?.status).toBe('running');
    expect(reflectedMs).toBeLessThan(15_000);
    expect(await mirrorDifferences(service.pool, world, everything(world))).toEqual([]);
  }, 240_000);
});

describe('an import against a Pozy that allows less than the budget says, and answers some 429s and 5xx besides', () => {
  let db: TestDatabase;
  let harness: Harness;

  beforeAll(async () => {
    db = await createTestDatabase('budget_429');
    harness = await startHarness(db.url, {
      // Configured for five times what Pozy allows this key: its headers and 429s must set the pace.
      env: { INITIAL_IMPORT: 'auto', POZY_RATE_LIMIT_PER_MINUTE: '100', POZY_RATE_LIMIT_WINDOW_MS: String(WINDOW_MS) },
      simulator: { rateLimitPerMinute: 20, rateLimitWindowMs: WINDOW_MS },
      deliver: false,
      faults: { api429Rate: 0.15, api5xxRate: 0.1 },
      before: (sim) => sim.world.seedExisting({ posts: 8_000, accounts: 50 }),
    });
  }, 60_000);

  afterAll(async () => {
    await harness?.close();
    await db?.drop();
  });

  it('waits them out, keeps its checkpoint, and succeeds with every page read', async () => {
    const { sim, service } = harness;
    const run = await importEnded(service.pool, 90_000);
    const pauses = metricTotal(parseMetrics(await (await fetch(`${service.baseUrl}/metrics`)).text()), 'pozy_sync_pozy_rate_limit_pauses_total');
    const api = sim.stats().api;
    process.stdout.write(
      `budget under 429s: import ${run.status} with ${run.pages_read} list pages; ${pauses} pauses for 429s (${api.rateLimited} for Pozy's limit); ` +
        `at most ${sim.mostAcceptedInWindow(WINDOW_MS)} requests accepted in any window of Pozy's 20\n`,
    );
    expect(run).toMatchObject({ status: 'succeeded', error: null });
    expect(pauses).toBeGreaterThan(0);
    expect(await mirrorDifferences(service.pool, sim.world, everything(sim.world))).toEqual([]);
    // Pozy's headers took the pace down to its limit: 429s for a full window stayed few.
    expect(api.rateLimited).toBeLessThanOrEqual(3);
  }, 120_000);
});
