import { mirrorDifferences } from '../simulator/mirror-check';
import { startSpec, SimulatorSpec } from './support/spec';
import { everything, latestRun } from './support/runs';

/** The import as `/sync/status` shows it (the fields the demo's bar and the status page read). */
interface ImportFigures {
  status: string;
  phase?: string;
  pass?: number;
  progress?: {
    posts: { done: number; total: number | null };
    currentPass?: { done: number; total: number | null };
    postsPerSecond: number | null;
  };
}

const POSTS = 5_000;
/** Posts deleted in Pozy, without an event, once the first pass has listed them: its end then counts fewer than it saw. */
const DELETED_SILENTLY = 5;
/** Posts created while the second pass lists: it finds them at the end of the list, after the first pass ended. */
const CREATED_IN_SECOND_PASS = 3;
const DEADLINE_MS = 240_000;

describe("the import's progress in /sync/status, through a second listing pass", () => {
  let spec: SimulatorSpec;

  beforeAll(async () => {
    spec = await startSpec('import_progress', {
      // Every reading of the status is a fresh one: each poll sees the run as it is.
      env: { INITIAL_IMPORT: 'auto', STATUS_CACHE_MS: '0' },
      simulator: {
        // No webhook reaches the service: a deletion is known only to Pozy, as when Pozy drops a delivery.
        deliver: false,
        // Slow enough a list page that the test acts while the first pass is under way.
        faults: { apiLatencyMs: 150 },
        before: (sim) => sim.world.seedExisting({ posts: POSTS, accounts: 20 }),
      },
    });
  }, 120_000);

  afterAll(async () => {
    await spec?.close();
  });

  it('never shows fewer posts done, or a smaller total, than before; the second pass has figures of its own', async () => {
    const { sim, service } = spec;
    const world = sim.world;
    const accountId = world.listAccounts()[0]._id;
    const samples: ImportFigures[] = [];
    let deleted = 0;
    let created = 0;
    let ended = false;
    const deadline = Date.now() + DEADLINE_MS;
    // What makes the second pass, done as soon as the import gets there (beside the readings of the status, which take
    // a while each on a busy machine): once the first page of posts has committed, a few of the oldest posts (which it
    // listed) deleted without an event; once the second pass has begun, new posts.
    const drive = (async () => {
      while (!ended && Date.now() < deadline && created === 0) {
        const run = await latestRun(service.pool);
        if (deleted === 0 && run?.phase === 'posts' && run.pass === 1 && run.posts_done > 0) {
          for (const post of world.listPosts().slice(0, DELETED_SILENTLY)) world.deletePost(post._id);
          deleted = DELETED_SILENTLY;
        }
        if (deleted > 0 && (run?.pass ?? 1) > 1) {
          for (let i = 0; i < CREATED_IN_SECOND_PASS; i += 1)
            world.createPost({ content: `created in the second pass ${i}`, accountIds: [accountId] });
          created = CREATED_IN_SECOND_PASS;
        }
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    })();
    try {
      for (;;) {
        if (Date.now() > deadline)
          throw new Error(`the import did not end within ${DEADLINE_MS / 1000} s; last seen ${JSON.stringify(samples.at(-1))}`);
        const run = ((await (await fetch(`${service.baseUrl}/sync/status`)).json()) as { import: ImportFigures }).import;
        if (run.progress) samples.push(run);
        if (run.status !== 'running' && run.status !== 'pending' && samples.length > 0) break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    } finally {
      ended = true;
      await drive;
    }

    const final = samples.at(-1)!;
    expect(final.status).toBe('succeeded');
    expect(deleted).toBe(DELETED_SILENTLY);
    // The test saw the second pass under way (else it would show nothing about one).
    const secondPass = samples.filter((s) => s.status === 'running' && s.phase === 'posts' && (s.pass ?? 1) > 1);
    const trace = samples.map((s) => `${s.status}/${s.phase}/${s.pass}: ${s.progress!.posts.done} of ${s.progress!.posts.total}`);
    if (secondPass.length === 0) throw new Error(`no second pass seen: ${[...new Set(trace)].join(', ')}`);

    // Done and total never go back, from the first reading to the last, across passes and phases.
    const backwards: string[] = [];
    for (const [i, now] of samples.entries()) {
      if (i === 0) continue;
      const before = samples[i - 1];
      const [a, b] = [before.progress!.posts, now.progress!.posts];
      const at = `reading ${i} (pass ${before.pass} ${before.phase} -> pass ${now.pass} ${now.phase})`;
      if (b.done < a.done) backwards.push(`${at}: posts done ${a.done} -> ${b.done}`);
      if (a.total !== null && (b.total === null || b.total < a.total)) backwards.push(`${at}: posts total ${a.total} -> ${b.total}`);
      // Once shown, the rate is not dropped while the run goes on (a new pass is not a new start).
      if (now.status === 'running' && before.progress!.postsPerSecond !== null && now.progress!.postsPerSecond === null) {
        backwards.push(`${at}: the rate went from ${before.progress!.postsPerSecond} to none`);
      }
      // A pass's own figures never go back within it.
      if (before.pass === now.pass && (now.progress!.currentPass?.done ?? 0) < (before.progress!.currentPass?.done ?? 0)) {
        backwards.push(`${at}: the pass's own figure ${before.progress!.currentPass?.done} -> ${now.progress!.currentPass?.done}`);
      }
    }
    expect(backwards).toEqual([]);
    for (const s of samples) {
      const { done, total } = s.progress!.posts;
      if (total !== null) expect(done).toBeLessThanOrEqual(total);
    }

    // The second pass's own figures start again from the beginning of the list, beside the run's.
    expect(Math.min(...secondPass.map((s) => s.progress!.currentPass!.done))).toBeLessThan(POSTS / 2);
    expect(Math.min(...secondPass.map((s) => s.progress!.posts.done))).toBeGreaterThanOrEqual(POSTS - DELETED_SILENTLY);

    // Each post counted once: those the first pass listed, and those only the second found.
    const run = await latestRun(service.pool);
    expect(run).toMatchObject({ status: 'succeeded', pass: 2 });
    expect(final.progress!.posts.done).toBe(POSTS + created);
    expect(final.progress!.posts.done).toBe(run!.posts_done);
    expect(final.progress!.posts.total).toBe(POSTS + created);
    expect(await mirrorDifferences(service.pool, world, everything(world))).toEqual([]);
    process.stdout.write(
      `import progress: ${samples.length} readings through ${run!.pass} passes, ${secondPass.length} of them in the second; ` +
        `done ${final.progress!.posts.done} of ${final.progress!.posts.total}\n`,
    );
  }, 300_000);
});
