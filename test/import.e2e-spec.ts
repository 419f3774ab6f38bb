import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Pool, PoolClient } from 'pg';
import { Rng } from '../simulator/faults';
import { mirrorDifferences } from '../simulator/mirror-check';
import { PozySimulator } from '../simulator/simulator';
import { createTestDatabase, TestDatabase } from './support/database';
import { apiCalls, Harness, HARNESS_ADMIN_TOKEN, settled, startHarness } from './support/harness';
import { freePort } from './support/ports';
import { spawnService } from './support/process';
import { everything, importEnded, latestRun } from './support/runs';
import { TEST_WEBHOOK_SECRET, waitFor } from './support/service';

const POSTS_ROUTE = 'GET /v1/posts';
/** Changes made while the import runs, at most. */
const MAX_CHANGES = 1_000;

describe('the first start against a workspace that already exists (INITIAL_IMPORT=auto)', () => {
  let db: TestDatabase;
  let harness: Harness;

  beforeAll(async () => {
    db = await createTestDatabase('import');
    harness = await startHarness(db.url, {
      env: { INITIAL_IMPORT: 'auto' },
      // Slow enough a list page that the workspace changes while the import reads it.
      faults: { apiLatencyMs: 20 },
      before: (sim) => sim.world.seedExisting({ posts: 20_000, accounts: 500 }),
    });
  }, 120_000);

  afterAll(async () => {
    await harness?.close();
    await db?.drop();
  });

  it('mirrors every account and post with no admin call, while webhooks for changes made meanwhile are applied', async () => {
    const { sim, service } = harness;
    const existing = sim.world.listPosts().map((p) => p._id);
    const rng = new Rng(11);
    let changes = 0;
    let changesDuringImport = 0;
    let pageDuringImport = '';
    // Changes Pozy announces, made while the import pages: their webhooks are reconciled as usual. A bounded number of
    // them: on a slow machine the import takes longer, and changes made all along would take its budget longer still.
    for (;;) {
      const run = await latestRun(service.pool);
      if (run && run.status !== 'running') break;
      if (changes < MAX_CHANGES) {
        sim.world.randomStep(rng, { silent: false });
        changes += 1;
        if (run) changesDuringImport += 1;
      }
      if (run?.phase === 'posts' && !pageDuringImport) pageDuringImport = await (await fetch(`${service.baseUrl}/`)).text();
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const run = await latestRun(service.pool);
    expect(run).toMatchObject({ kind: 'import', status: 'succeeded', error: null });
    expect(changesDuringImport).toBeGreaterThan(50);
    // The status page showed the import's progress while it ran.
    expect(pageDuringImport).toMatch(/<progress id="import-progress" max="\d+" value="\d+"/);
    await settled(harness, 60_000);

    // Nothing rolled back: once the webhooks' reads are done, every post that existed before the start, and every one
    // an event named since, is Pozy's current state. (A draft created without an event after the listing passed is
    // the next sweep's business.)
    const known = { postIds: [...existing, ...harness.seen.postIds], profileIds: everything(sim.world).profileIds };
    expect(await mirrorDifferences(service.pool, sim.world, known)).toEqual([]);
    expect(run!.posts_created).toBeGreaterThan(19_000);
    expect(run!.accounts_created).toBeGreaterThanOrEqual(450);
    // One list page per 490 posts (each page reads ten back), a few read ahead: not a page per post. (A second
    // listing when a deletion's webhook had not been read yet when the first ended.)
    expect(apiCalls(harness, POSTS_ROUTE)).toBeLessThan(run!.pass * 50);

    // A reading of the status figures begun before the run ended may still answer (STATUS_CACHE_MS): poll.
    const status = await waitFor(
      'the status to show the import succeeded',
      async () => {
        const answered = (await (await fetch(`${service.baseUrl}/sync/status`)).json()) as { import: Record<string, unknown> };
        return answered.import.status === 'succeeded' ? answered : undefined;
      },
      60_000,
    );
    expect(status.import).toMatchObject({ status: 'succeeded', runId: run!.id });
    const view = (await (
      await fetch(`${service.baseUrl}/admin/sweep/${run!.id}`, { headers: { authorization: `Bearer ${HARNESS_ADMIN_TOKEN}` } })
    ).json()) as {
      kind: string;
      progress: { posts: { done: number } };
    };
    expect(view).toMatchObject({ kind: 'import', progress: { posts: { done: run!.posts_done } } });
    process.stdout.write(
      `import: 20,000 posts and 500 accounts imported with ${changes} changes made meanwhile (${changesDuringImport} during it); ` +
        `${apiCalls(harness, POSTS_ROUTE)} list pages in ${run!.pass} listing(s)\n`,
    );
  }, 300_000);

  it('does not import again on the next start', async () => {
    const { rows } = await harness.service.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM sweep_run WHERE kind = 'import'");
    // A worker's start includes its first look for a run to start or resume.
    const restarted = await startHarness(db.url, { env: { INITIAL_IMPORT: 'auto' } });
    try {
      const again = await harness.service.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM sweep_run WHERE kind = 'import'");
      expect(again.rows[0].n).toBe(rows[0].n);
      expect(apiCalls(restarted, POSTS_ROUTE)).toBe(0);
    } finally {
      await restarted.close();
    }
  });
});

describe('posts created and deleted between two pages of the import', () => {
  let db: TestDatabase;
  let harness: Harness;

  beforeAll(async () => {
    db = await createTestDatabase('import_drift');
    harness = await startHarness(db.url, {
      env: { INITIAL_IMPORT: 'auto' },
      // No webhook: what the mirror holds in the end is the import's doing alone.
      deliver: false,
      faults: { apiLatencyMs: 60 },
      before: (sim) => sim.world.seedExisting({ posts: 10_000, accounts: 200 }),
    });
  }, 120_000);

  afterAll(async () => {
    await harness?.close();
    await db?.drop();
  });

  it('skips none and resurrects none', async () => {
    const { sim, service } = harness;
    const world = sim.world;
    const rng = new Rng(3);
    const deleted: string[] = [];
    const created: string[] = [];
    const accountIds = world
      .listAccounts()
      .slice(0, 3)
      .map((a) => a._id);
    // While the first listing is under way: bursts of deletions among the oldest posts (behind the cursor, more than
    // the overlap of ten a page, so the list shifts under it), and new posts (after the cursor).
    for (;;) {
      const run = await latestRun(service.pool);
      if (run && (run.pass > 1 || (run.phase !== 'posts' && run.phase !== 'accounts') || run.posts_done > 6_000)) break;
      if (run?.phase === 'posts' && run.posts_done > 0) {
        const oldest = world.listPosts().slice(0, 200);
        for (let i = 0; i < 15; i += 1) {
          const victim = oldest[rng.int(oldest.length)];
          if (world.getPost(victim._id)) {
            world.deletePost(victim._id);
            deleted.push(victim._id);
          }
        }
        created.push(world.createPost({ content: `new while importing ${created.length}`, accountIds: [accountIds[created.length % 3]] })._id);
      }
      await new Promise((resolve) => setTimeout(resolve, 40));
    }
    await importEnded(service.pool, 180_000);

    const run = await latestRun(service.pool);
    expect(run).toMatchObject({ status: 'succeeded' });
    expect(deleted.length).toBeGreaterThan(20);
    expect(created.length).toBeGreaterThan(1);
    expect(await mirrorDifferences(service.pool, world, everything(world))).toEqual([]);
    const { rows } = await service.pool.query<{ id: string; deleted: boolean }>(
      'SELECT id, deleted_at IS NOT NULL AS deleted FROM post WHERE id = ANY($1::text[])',
      [[...deleted, ...created]],
    );
    const rowsById = new Map(rows.map((r) => [r.id, r.deleted]));
    // Every post created meanwhile is there; every deleted one is absent, or marked deleted.
    expect(created.filter((id) => rowsById.get(id) !== false)).toEqual([]);
    expect(deleted.filter((id) => rowsById.get(id) === false)).toEqual([]);
    process.stdout.write(
      `import with drift: ${deleted.length} deleted and ${created.length} created while it paged; ${run!.pass} listings, ${run!.pages_read} list pages\n`,
    );
  }, 300_000);
});

describe('the database with no connection to give during the import', () => {
  let db: TestDatabase;
  let harness: Harness;
  let direct: Pool;

  beforeAll(async () => {
    db = await createTestDatabase('import_no_connection');
    harness = await startHarness(db.url, {
      env: { INITIAL_IMPORT: 'auto' },
      deliver: false,
      faults: { apiLatencyMs: 60 },
      before: (sim) => sim.world.seedExisting({ posts: 6_000, accounts: 60 }),
    });
    direct = db.pool(2);
  }, 120_000);

  afterAll(async () => {
    await direct?.end();
    await harness?.close();
    await db?.drop();
  });

  it('goes on from its checkpoint once connections come free, never failed', async () => {
    const { sim, service } = harness;
    const under = await waitFor(
      'the import to be under way',
      async () => {
        const run = await latestRun(direct);
        return run && run.posts_done >= 1_000 ? run : undefined;
      },
      60_000,
    );
    const statuses = new Set<string>();
    let watching = true;
    const watch = (async () => {
      while (watching) {
        const run = await latestRun(direct);
        if (run) statuses.add(run.status);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();
    // Every connection of the service's pool that comes free taken, until one is not had within the pool's wait (2 s),
    // then kept 5 s more: the import's next page finds none in time, as on a machine out of breath.
    const held: PoolClient[] = [];
    try {
      for (;;) {
        const taken = await service.pool.connect().catch(() => undefined);
        if (!taken) break;
        held.push(taken);
      }
      expect(held.length).toBeGreaterThan(0);
      await new Promise((resolve) => setTimeout(resolve, 5_000));
    } finally {
      for (const client of held) client.release();
    }

    const run = await importEnded(direct, 120_000, 'the import to complete');
    watching = false;
    await watch;
    expect(run).toMatchObject({ id: under.id, status: 'succeeded', error: null, last_error: null });
    expect([...statuses]).not.toContain('failed');
    // It did stop for want of a connection: the run was taken up again from its checkpoint (a claim marks it resumed).
    const { rows } = await direct.query<{ resumed: boolean }>('SELECT resumed_at IS NOT NULL AS resumed FROM sweep_run WHERE id = $1', [run.id]);
    expect(rows[0].resumed).toBe(true);
    expect(await mirrorDifferences(direct, sim.world, everything(sim.world))).toEqual([]);
  }, 300_000);
});

describe('the service killed (SIGKILL) in the middle of the import', () => {
  let db: TestDatabase;
  let sim: PozySimulator;
  let direct: Pool;

  beforeAll(async () => {
    db = await createTestDatabase('import_crash');
    sim = await PozySimulator.start({ apiKey: 'sk_sim_import_crash', seed: 9, rateLimitPerMinute: 100_000, faults: { apiLatencyMs: 150 } });
    sim.world.seedExisting({ posts: 20_000, accounts: 100 });
    direct = db.pool(2);
  }, 60_000);

  afterAll(async () => {
    await direct?.end();
    await sim?.stop();
    await db?.drop();
  });

  it('resumes from its checkpoint after a restart, without reading every page again, and completes', async () => {
    const port = await freePort();
    const env = {
      PORT: String(port),
      HOST: '127.0.0.1',
      DATABASE_URL: db.url,
      POZY_API_URL: sim.url,
      POZY_API_KEY: sim.apiKey,
      POZY_WEBHOOK_SECRET: TEST_WEBHOOK_SECRET,
      POZY_RATE_LIMIT_PER_MINUTE: '100000',
      BACKFILL_CRON: 'off',
      SPOOL_DIR: mkdtempSync(join(tmpdir(), 'pozy-import-spool-')),
      LOG_LEVEL: 'warn',
    };
    const first = spawnService(env, process.cwd());
    let killedAt: { postsDone: number; pages: number; runId: string };
    try {
      killedAt = await waitFor(
        'the import to be under way',
        async () => {
          // Before the service has migrated, there is no run table yet.
          const run = await latestRun(direct).catch(() => undefined);
          return run && run.posts_done >= 6_000 ? { postsDone: run.posts_done, pages: apiCalls({ sim }, POSTS_ROUTE), runId: run.id } : undefined;
        },
        60_000,
      );
      first.child.kill('SIGKILL');
      await first.exited;
    } finally {
      first.child.kill('SIGKILL');
    }
    const pagesBefore = apiCalls({ sim }, POSTS_ROUTE);
    expect((await latestRun(direct))?.status).toBe('running');

    const second = spawnService(env, process.cwd());
    try {
      const run = await importEnded(direct, 90_000, 'the import to complete after the restart');
      expect(run).toMatchObject({ id: killedAt.runId, status: 'succeeded' });
      const pagesAfter = apiCalls({ sim }, POSTS_ROUTE) - pagesBefore;
      const fullListing = Math.ceil(20_000 / 490);
      // It went on from where it was: far fewer pages than a listing from the start.
      expect(pagesAfter).toBeLessThan(fullListing - Math.floor(killedAt.postsDone / 500) + 6);
      expect(pagesAfter).toBeLessThan(fullListing);
      expect(await mirrorDifferences(direct, sim.world, everything(sim.world))).toEqual([]);
      process.stdout.write(
        `import killed at ${killedAt.postsDone} posts (${pagesBefore} list pages read); after the restart: ${pagesAfter} more pages (a whole listing is ${fullListing})\n`,
      );
      second.child.kill('SIGTERM');
      expect(await second.exited).toBe(0);
    } finally {
      second.child.kill('SIGKILL');
    }
  }, 180_000);
});
