import { mirrorDifferences } from '../simulator/mirror-check';
import { HARNESS_ADMIN_TOKEN } from './support/harness';
import { waitFor } from './support/service';
import { SimulatorSpec, startSpec } from './support/spec';

interface Run {
  id: string;
  kind: string;
  status: string;
  dryRun: boolean;
  posts: { created: number; changed: number; deleted: number; unchanged: number };
  accounts: { created: number; changed: number; deleted: number; unchanged: number };
  error: string | null;
}

describe('POST /admin/sweep: the full sweep', () => {
  let harness: SimulatorSpec;

  const admin = { authorization: `Bearer ${HARNESS_ADMIN_TOKEN}` };
  const start = async (query = ''): Promise<{ status: number; body: { runId?: string; error?: string } }> => {
    const response = await fetch(`${harness.service.baseUrl}/admin/sweep${query}`, { method: 'POST', headers: admin });
    return { status: response.status, body: (await response.json()) as { runId?: string } };
  };
  /** Starts a sweep and follows it to its end through GET /admin/sweep/:runId. */
  const sweep = async (query = ''): Promise<{ status: number; body: Run }> => {
    const started = await start(query);
    expect(started.status).toBe(202);
    const body = await waitFor('the sweep to end', async () => {
      const run = (await (await fetch(`${harness.service.baseUrl}/admin/sweep/${started.body.runId}`, { headers: admin })).json()) as Run;
      return run.status === 'running' ? undefined : run;
    });
    return { status: started.status, body };
  };
  /** Everything the world holds, delivered or not: the sweep does not need events. */
  const everything = () => {
    const truth = harness.sim.world.snapshot();
    return {
      postIds: [...truth.posts.map((p) => p._id), ...truth.deletedPostIds],
      profileIds: harness.sim.world.listProfiles().map((p) => p._id),
    };
  };
  const rowCount = async () =>
    (await harness.service.pool.query<{ n: string }>('SELECT (SELECT count(*) FROM post) + (SELECT count(*) FROM account) AS n')).rows[0];

  beforeAll(async () => {
    // No webhook ever reaches the service: only the sweep can fill the mirror.
    harness = await startSpec('sweep', { simulator: { deliver: false } });
    harness.sim.world.seedWorld({ profiles: 2, accountsPerProfile: 3, posts: 12 });
  });

  afterAll(async () => {
    await harness?.close();
  });

  it('counts in a dry run and changes nothing', async () => {
    const before = await rowCount();

    const { status, body } = await sweep('?dryRun=true');

    expect(status).toBe(202);
    expect(body).toMatchObject({
      kind: 'sweep',
      status: 'succeeded',
      dryRun: true,
      posts: { created: 12, changed: 0, deleted: 0, unchanged: 0 },
      accounts: { created: 6, changed: 0, deleted: 0, unchanged: 0 },
      error: null,
    });
    expect(await rowCount()).toEqual(before);
  });

  it('fills the mirror with everything Pozy lists, then finds nothing to change', async () => {
    expect((await sweep()).body).toMatchObject({ posts: { created: 12 }, accounts: { created: 6 } });
    expect(await mirrorDifferences(harness.service.pool, harness.sim.world, everything())).toEqual([]);

    expect((await sweep()).body).toMatchObject({
      posts: { created: 0, changed: 0, deleted: 0, unchanged: 12 },
      accounts: { created: 0, changed: 0, deleted: 0, unchanged: 6 },
    });
  });

  it('finds what no event announced: an edit, a deleted draft, a removed account', async () => {
    const world = harness.sim.world;
    const [first, second] = world.listPosts().filter((p) => p.status !== 'published');
    world.editPost(first._id, { content: 'edited in silence' });
    world.deletePost(second._id);
    world.removeAccount(world.listAccounts()[0]._id);

    expect((await sweep('?dryRun=true')).body).toMatchObject({ posts: { changed: 1, deleted: 1 }, accounts: { deleted: 1 } });
    expect((await sweep()).body).toMatchObject({ posts: { changed: 1, deleted: 1 }, accounts: { deleted: 1 } });
    expect(await mirrorDifferences(harness.service.pool, world, everything())).toEqual([]);
  });

  it('refuses without the admin token, with a wrong one, a bad dryRun or run id, and any body', async () => {
    const runCount = async () => (await harness.service.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM sweep_run')).rows[0].n;
    const before = await rowCount();
    const runsBefore = await runCount();
    const anonymous = await fetch(`${harness.service.baseUrl}/admin/sweep`, { method: 'POST' });
    const wrong = await fetch(`${harness.service.baseUrl}/admin/sweep`, { method: 'POST', headers: { authorization: 'Bearer nope' } });
    const bad = await start('?dryRun=perhaps');
    const unknown = await start('?dryRun=true&everything=1');
    const badId = await fetch(`${harness.service.baseUrl}/admin/sweep/not-a-uuid`, { headers: admin });
    const missing = await fetch(`${harness.service.baseUrl}/admin/sweep/3f1c9e52-7a0b-4d6e-9c11-2b8e5f0a7d34`, { headers: admin });

    expect(anonymous.status).toBe(401);
    expect(wrong.status).toBe(403);
    expect(bad).toMatchObject({ status: 400, body: { error: 'invalid_request' } });
    expect(unknown).toMatchObject({ status: 400, body: { error: 'invalid_request' } });
    expect(badId.status).toBe(400);
    expect(missing.status).toBe(404);
    // Options go in the query: a body, even a well-meant one, starts nothing.
    const withBody = (body: string, type = 'application/json') =>
      fetch(`${harness.service.baseUrl}/admin/sweep`, { method: 'POST', headers: { ...admin, 'content-type': type }, body });
    const meant = await withBody('{"dryRun": true}');
    expect(meant.status).toBe(400);
    expect(await meant.json()).toMatchObject({ error: 'invalid_request', message: expect.stringContaining('?dryRun=true') });
    expect((await withBody('{"dryRun": ')).status).toBe(400);
    expect((await withBody(JSON.stringify({ pad: 'x'.repeat(1024 * 1024 + 1) }))).status).toBe(413);
    expect((await withBody('dryRun=true', 'text/plain')).status).toBe(415);
    expect(await rowCount()).toEqual(before);
    expect(await runCount()).toBe(runsBefore);
  });
});

describe('the full sweep on a schedule (SWEEP_CRON)', () => {
  let harness: SimulatorSpec;

  beforeAll(async () => {
    harness = await startSpec('sweep_schedule', { env: { SWEEP_CRON: '* * * * * *' }, simulator: { deliver: false } });
  });

  afterAll(async () => {
    await harness?.close();
  });

  it('brings an event-less mirror to the truth by itself', async () => {
    const world = harness.sim.world;
    world.seedWorld({ profiles: 1, accountsPerProfile: 2, posts: 4 });
    const truth = world.snapshot();
    const everything = { postIds: truth.posts.map((p) => p._id), profileIds: world.listProfiles().map((p) => p._id) };

    await waitFor('a scheduled sweep to fill the mirror', async () =>
      (await mirrorDifferences(harness.service.pool, world, everything)).length === 0 ? true : undefined,
    );
  });
});
