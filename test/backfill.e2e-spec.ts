import { randomUUID } from 'node:crypto';
import type { PozyEvent } from '../simulator/world/pozy-shapes';
import { ApiError } from '../src/common/api-error';
import { EventIngester } from '../src/receive/event-ingester';
import { mirrorDifferences } from '../simulator/mirror-check';
import { createTestDatabase, TestDatabase } from './support/database';
import { Harness, HARNESS_ADMIN_TOKEN, settled, startHarness } from './support/harness';
import { startService, waitFor } from './support/service';

interface Run {
  id: string;
  status: string;
  rowsScanned: number;
  eventsRecovered: number;
  eventsSkipped: number;
  scanFrom: string | null;
  newestLogAt: string | null;
  error: string | null;
}

const auth = { authorization: `Bearer ${HARNESS_ADMIN_TOKEN}` };

describe("backfill from Pozy's delivery logs", () => {
  let db: TestDatabase;
  let harness: Harness;

  async function startRun(): Promise<{ status: number; body: { runId?: string; error?: string; details?: { runId: string | null } } }> {
    const response = await fetch(`${harness.service.baseUrl}/admin/backfill`, { method: 'POST', headers: auth });
    return { status: response.status, body: (await response.json()) as { runId?: string } };
  }

  async function finished(runId: string): Promise<Run> {
    return waitFor(`backfill run ${runId} to finish`, async () => {
      const response = await fetch(`${harness.service.baseUrl}/admin/backfill/${runId}`, { headers: auth });
      const run = (await response.json()) as Run;
      return run.status === 'running' ? undefined : run;
    });
  }

  /** Changes the world while every delivery is dropped (logged as failed, never retried); returns the lost events. */
  async function losingDeliveries(change: () => void): Promise<PozyEvent[]> {
    const lost: PozyEvent[] = [];
    const stop = harness.sim.world.onEvent((e) => lost.push(e));
    harness.sim.setFaults({ dropRate: 1 });
    change();
    stop();
    await harness.sim.idle();
    harness.sim.setFaults({ dropRate: 0 });
    return lost;
  }

  beforeAll(async () => {
    db = await createTestDatabase('backfill');
    // One retry per request: a test that breaks Pozy's API wants the run to fail fast.
    harness = await startHarness(db.url, { env: { POZY_MAX_RETRIES: '1', BACKFILL_OVERLAP_MS: '60000' } });
    harness.sim.world.seedWorld({ profiles: 1, accountsPerProfile: 3, posts: 5 });
    await settled(harness);
  });

  afterAll(async () => {
    await harness?.close();
    await db?.drop();
  });

  it('recovers exactly the events Pozy dropped, and the mirror then equals the truth', async () => {
    const world = harness.sim.world;
    const [account] = world.listAccounts();
    const lost = await losingDeliveries(() => {
      const post = world.createPost({ content: 'never delivered', accountIds: [account._id], scheduledFor: Date.now() + 60_000 });
      world.publishPost(post._id);
      world.disconnectAccount(account._id, { intentional: false });
    });
    expect(lost.length).toBeGreaterThanOrEqual(4);
    const { rows: before } = await harness.service.pool.query('SELECT id FROM pozy_event WHERE id = ANY($1)', [lost.map((e) => e.id)]);
    expect(before).toEqual([]);

    const start = await startRun();
    expect(start.status).toBe(202);
    const run = await finished(start.body.runId!);

    expect(run).toMatchObject({ status: 'succeeded', eventsRecovered: lost.length, error: null });
    expect(run.rowsScanned).toBeGreaterThanOrEqual(lost.length);
    const { rows } = await harness.service.pool.query<{ id: string; recovered_by: string }>(
      'SELECT id, recovered_by FROM pozy_event WHERE id = ANY($1)',
      [lost.map((e) => e.id)],
    );
    expect(rows.map((r) => r.id).sort()).toEqual(lost.map((e) => e.id).sort());
    expect(new Set(rows.map((r) => r.recovered_by))).toEqual(new Set([run.id]));
    await settled(harness);
    expect(await mirrorDifferences(harness.service.pool, world, harness.seen)).toEqual([]);

    // One reading of the figures answers every caller for STATUS_CACHE_MS, and a reading begun before the run ended
    // (the freshness objective's own, say) may still be the one answered: the status shows the run soon after.
    const status = await waitFor('the status to show the run', async () => {
      const answered = (await (await fetch(`${harness.service.baseUrl}/sync/status`)).json()) as {
        backfill: { lastRun: { id: string } | null; gaps: Array<{ events: number }> };
      };
      return answered.backfill.lastRun?.id === run.id ? answered : undefined;
    });
    expect(status.backfill.gaps.reduce((sum, g) => sum + g.events, 0)).toBe(lost.length);
  });

  it('starts the next run from the checkpoint less the overlap, and recovers nothing twice', async () => {
    const first = await finished((await startRun()).body.runId!);
    const second = await finished((await startRun()).body.runId!);

    expect(second).toMatchObject({ status: 'succeeded', eventsRecovered: 0 });
    expect(second.scanFrom).not.toBeNull();
    expect(first.status).toBe('succeeded');
  });

  it('refuses a second run while one is running', async () => {
    // A slow API keeps the first run going.
    harness.sim.setFaults({ apiSlowRate: 1, apiSlowMs: 300 });
    try {
      const first = await startRun();
      const second = await startRun();

      expect(first.status).toBe(202);
      expect(second).toMatchObject({ status: 409, body: { error: 'backfill_running', details: { runId: first.body.runId } } });
      await finished(first.body.runId!);
    } finally {
      harness.sim.setFaults({ apiSlowRate: 0 });
    }
  });

  it('records a run that fails part-way as failed, and the next run recovers what it missed', async () => {
    const world = harness.sim.world;
    const [, account] = world.listAccounts();
    const lost = await losingDeliveries(() => {
      world.createPost({ content: 'lost while Pozy is down', accountIds: [account._id], scheduledFor: Date.now() + 60_000 });
    });
    harness.sim.setFaults({ api5xxRate: 1 });
    const failed = await finished((await startRun()).body.runId!);
    harness.sim.setFaults({ api5xxRate: 0 });

    expect(failed).toMatchObject({ status: 'failed', eventsRecovered: 0 });
    expect(failed.error).toMatch(/HTTP 500/);
    const retried = await finished((await startRun()).body.runId!);
    expect(retried).toMatchObject({ status: 'succeeded', eventsRecovered: lost.length });
  });

  it('fails, moving no checkpoint, when a logged event is not stored for a reason other than itself; the next run recovers it', async () => {
    const world = harness.sim.world;
    const [account] = world.listAccounts();
    const before = await finished((await startRun()).body.runId!);
    const lost = await losingDeliveries(() => {
      world.createPost({ content: 'lost while the receiver is overloaded', accountIds: [account._id], scheduledFor: Date.now() + 60_000 });
    });
    // The receiver sheds load (503 overloaded, past 10,000 deliveries waiting for the database) for the run's events.
    const ingester = harness.service.app.get(EventIngester);
    const store = ingester.store.bind(ingester);
    const overloaded = jest
      .spyOn(ingester, 'store')
      .mockImplementation((event) =>
        event.recoveredBy ? Promise.reject(new ApiError('overloaded', 'Too many webhooks waiting for the database; retry later')) : store(event),
      );
    let failed: Run;
    try {
      failed = await finished((await startRun()).body.runId!);
    } finally {
      overloaded.mockRestore();
    }

    expect(failed).toMatchObject({ status: 'failed', eventsRecovered: 0, eventsSkipped: 0 });
    expect(failed.error).toMatch(/was not stored \(ApiError: Too many webhooks waiting for the database/);
    const { rows } = await harness.service.pool.query('SELECT id FROM pozy_event WHERE id = ANY($1)', [lost.map((e) => e.id)]);
    expect(rows).toEqual([]);
    // The checkpoint is still the last successful run's newest row: the next run reads the same window again.
    expect(new Date(failed.scanFrom!).getTime()).toBe(new Date(before.newestLogAt!).getTime() - 60_000);
    const retried = await finished((await startRun()).body.runId!);
    expect(retried.scanFrom).toBe(failed.scanFrom);
    expect(retried).toMatchObject({ status: 'succeeded', eventsRecovered: lost.length, eventsSkipped: 0 });
  });

  it('skips a logged event older than EVENT_RETENTION_DAYS less a day, counted, and recovers the others', async () => {
    const world = harness.sim.world;
    const [account] = world.listAccounts();
    const stale: PozyEvent = {
      id: randomUUID(),
      event: 'post.published',
      timestamp: '2020-01-01T00:00:00.000Z',
      post: { id: '66aa01f3c2b1e4d5f6a70001', content: 'captured long ago', status: 'published', platforms: [] },
    };
    const lost = await losingDeliveries(() => {
      world.createPost({ content: 'lost beside a stale one', accountIds: [account._id], scheduledFor: Date.now() + 60_000 });
      harness.sim.sendEvent(stale);
    });

    const run = await finished((await startRun()).body.runId!);

    expect(run).toMatchObject({ status: 'succeeded', eventsRecovered: lost.length, eventsSkipped: 1, error: null });
    const { rows } = await harness.service.pool.query<{ id: string }>('SELECT id FROM pozy_event WHERE id = ANY($1)', [
      [stale.id, ...lost.map((e) => e.id)],
    ]);
    expect(rows.map((r) => r.id).sort()).toEqual(lost.map((e) => e.id).sort());
  });

  it.each([
    [401, 'POST without a token', 'POST', '/admin/backfill', {}],
    [403, 'POST with a wrong token', 'POST', '/admin/backfill', { authorization: 'Bearer nope' }],
    [401, 'GET without a token', 'GET', '/admin/backfill/8f1d2a3b-4c5d-4e6f-8a9b-0c1d2e3f4a5b', {}],
    [400, 'GET a run id that is not a UUID', 'GET', '/admin/backfill/run-1', auth],
    [404, 'GET an unknown run', 'GET', '/admin/backfill/8f1d2a3b-4c5d-4e6f-8a9b-0c1d2e3f4a5b', auth],
  ])('answers %i to %s, starting nothing', async (status, _name, method, path, headers) => {
    const before = (await harness.service.pool.query('SELECT count(*)::int AS n FROM backfill_run')).rows[0];
    const response = await fetch(`${harness.service.baseUrl}${path}`, { method, headers });

    expect(response.status).toBe(status);
    expect(((await response.json()) as { statusCode: number }).statusCode).toBe(status);
    expect((await harness.service.pool.query('SELECT count(*)::int AS n FROM backfill_run')).rows[0]).toEqual(before);
  });
});

describe('scheduled backfill on two replicas', () => {
  let db: TestDatabase;
  let harness: Harness;

  beforeAll(async () => {
    db = await createTestDatabase('backfill_schedule');
    // Every second, on both replicas: the advisory lock must keep their runs from overlapping.
    harness = await startHarness(db.url, { env: { BACKFILL_CRON: '* * * * * *' } });
  });

  afterAll(async () => {
    await harness?.close();
    await db?.drop();
  });

  it('recovers dropped events on schedule, one replica at a time', async () => {
    const second = await startService(db.url, {
      POZY_API_URL: harness.sim.url,
      POZY_API_KEY: harness.sim.apiKey,
      BACKFILL_CRON: '* * * * * *',
    });
    try {
      const world = harness.sim.world;
      const lost: PozyEvent[] = [];
      const stop = world.onEvent((e) => lost.push(e));
      harness.sim.setFaults({ dropRate: 1 });
      const profile = world.createProfile('Scheduled');
      world.connectAccount(profile._id, 'linkedin', 'scheduled');
      stop();
      await harness.sim.idle();
      harness.sim.setFaults({ dropRate: 0 });

      await waitFor('a scheduled run to recover the dropped events', async () => {
        const { rows } = await harness.service.pool.query('SELECT count(*)::int AS n FROM pozy_event WHERE recovered_by IS NOT NULL');
        return rows[0].n === lost.length ? true : undefined;
      });
      // Let a few more runs happen, then check that none overlapped another.
      await waitFor('more scheduled runs', async () => {
        const { rows } = await harness.service.pool.query("SELECT count(*)::int AS n FROM backfill_run WHERE status <> 'running'");
        return rows[0].n >= 4 ? true : undefined;
      });
      const { rows } = await harness.service.pool.query<{ trigger: string; started_at: Date; finished_at: Date | null }>(
        'SELECT trigger, started_at, finished_at FROM backfill_run ORDER BY started_at',
      );
      expect(new Set(rows.map((r) => r.trigger))).toEqual(new Set(['schedule']));
      for (let i = 1; i < rows.length; i += 1) {
        expect(rows[i].started_at.getTime()).toBeGreaterThanOrEqual(rows[i - 1].finished_at?.getTime() ?? Infinity);
      }
    } finally {
      await second.close();
    }
  });
});

describe("backfill past Pozy's paging limit (skip 10,000)", () => {
  let db: TestDatabase;
  let harness: Harness;

  beforeAll(async () => {
    db = await createTestDatabase('backfill_deep');
    // api-only: this test is about the event store; thousands of reconciles would only slow it down.
    harness = await startHarness(db.url, { env: { ROLE: 'api' }, faults: { dropRate: 1 } });
  });

  afterAll(async () => {
    await harness?.close();
    await db?.drop();
  });

  it('narrows by event type when the window holds more than 10,000 rows, and recovers them all', async () => {
    const world = harness.sim.world;
    // 11,000 dropped deliveries: 6,000 account.connected, 5,000 post.scheduled; each type alone fits.
    const profile = world.createProfile('Deep');
    const account = world.connectAccount(profile._id, 'linkedin', 'deep-0');
    for (let i = 1; i < 6_000; i += 1) world.connectAccount(profile._id, 'linkedin', `deep-${i}`);
    for (let i = 0; i < 5_000; i += 1) world.createPost({ content: `deep ${i}`, accountIds: [account._id], scheduledFor: Date.now() + 60_000 });
    await harness.sim.idle();

    const start = await fetch(`${harness.service.baseUrl}/admin/backfill`, { method: 'POST', headers: auth });
    const { runId } = (await start.json()) as { runId: string };
    const run = await waitFor(
      'the deep backfill to finish',
      async () => {
        const r = (await (await fetch(`${harness.service.baseUrl}/admin/backfill/${runId}`, { headers: auth })).json()) as Run & {
          narrowedTypes: string[];
        };
        return r.status === 'running' ? undefined : r;
      },
      120_000,
      250,
    );

    expect(run).toMatchObject({ status: 'succeeded', eventsRecovered: 11_000, error: null });
    expect(run.narrowedTypes).toEqual(expect.arrayContaining(['account.connected', 'post.scheduled']));
    const { rows } = await harness.service.pool.query('SELECT count(*)::int AS n FROM pozy_event');
    expect(rows[0].n).toBe(11_000);
  }, 180_000);

  it('says so and fails, rather than miss rows, when one event type alone is too deep', async () => {
    const world = harness.sim.world;
    const [profile] = world.listProfiles();
    for (let i = 0; i < 5_000; i += 1) world.connectAccount(profile._id, 'threads', `deeper-${i}`);
    await harness.sim.idle();

    const { runId } = (await (await fetch(`${harness.service.baseUrl}/admin/backfill`, { method: 'POST', headers: auth })).json()) as {
      runId: string;
    };
    const run = await waitFor(
      'the run to finish',
      async () => {
        const r = (await (await fetch(`${harness.service.baseUrl}/admin/backfill/${runId}`, { headers: auth })).json()) as Run;
        return r.status === 'running' ? undefined : r;
      },
      120_000,
      250,
    );

    expect(run.status).toBe('failed');
    expect(run.error).toMatch(/more than 10000 log rows of type account\.connected since .*run the full sweep/);
  }, 180_000);
});
