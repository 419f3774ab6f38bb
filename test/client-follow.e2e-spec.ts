import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { plainToInstance } from 'class-transformer';
import type { Pool } from 'pg';
import { DEFAULT_WORKSPACE } from '../src/common/workspace-id';
import { PostMirrorRepository } from '../src/mirror/posts/post-mirror.repository';
import { PozyPostDto } from '../src/pozy/dto/pozy-post.dto';
import { Rng } from '../simulator/faults';
import { PozySimulator } from '../simulator/simulator';
import { Balancer, startBalancer } from './support/balancer';
import { ConsumerState, readConsumerState, withoutBookkeeping } from './support/consumer-state';
import { createTestDatabase, TestDatabase } from './support/database';
import { backlog } from './support/harness';
import { ServiceProcess, spawnService } from './support/process';
import { RunningService, startService, TEST_WEBHOOK_SECRET, waitFor } from './support/service';

/** The example consumer, built on @pozy-sync/client's followChanges. */
const CONSUMER = join(__dirname, '..', 'examples', 'feed-consumer.mjs');
const ADMIN_TOKEN = 'client_follow_admin_token';
/** Feed entries the load must produce, at least. */
const CHANGES = 10_000;
/** Posts edited in Pozy and written by one replica in each round of the load. */
const BATCH = 250;
const MIRRORED_POSTS = 'SELECT count(*)::int AS n FROM post WHERE pozy_updated_at IS NOT NULL';

describe('followChanges in a consumer process, against two replicas with duplicated and reordered webhooks', () => {
  let db: TestDatabase;
  let sim: PozySimulator;
  let balancer: Balancer;
  let dir: string;
  const services: RunningService[] = [];
  const consumers: ServiceProcess[] = [];
  const pool = (): Pool => services[0].pool;
  const stateFile = () => join(dir, 'state.json');
  const readState = () => readConsumerState(stateFile());
  const api = async (path: string, init: RequestInit = {}) => {
    const response = await fetch(`${balancer.url}${path}`, init);
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };
  const count = async (statement: string) => (await pool().query<{ n: number }>(statement)).rows[0].n;
  const startConsumer = (): ServiceProcess => {
    const consumer = spawnService({ POZY_SYNC_URL: balancer.url, STATE_FILE: stateFile() }, dir, CONSUMER);
    consumers.push(consumer);
    return consumer;
  };

  /** Pozy has delivered everything, every read has run, every change is placed, and the consumer stored the head. */
  async function caughtUp(consumer: ServiceProcess): Promise<ConsumerState> {
    await waitFor('the simulator to deliver everything', async () => (sim.stats().webhooks.pending === 0 ? true : undefined), 120_000);
    await waitFor('every reconcile to run', async () => ((await backlog(pool())) === 0 ? true : undefined), 180_000);
    await waitFor(
      'every change to be placed',
      async () => ((await count('SELECT count(*)::int AS n FROM change WHERE position IS NULL')) === 0 ? true : undefined),
      60_000,
    );
    const { cursor } = (await api('/changes/head')).body as { cursor: string };
    return waitFor(
      `the consumer to store cursor ${cursor}`,
      async () => {
        if (consumer.child.exitCode !== null) throw new Error(`the consumer exited early:\n${consumer.output()}`);
        const state = readState();
        return state?.cursor === cursor ? state : undefined;
      },
      60_000,
    );
  }

  async function expectCopyEqualsMirror(state: ConsumerState): Promise<number> {
    const ids = async (statement: string) => (await pool().query<{ id: string }>(statement)).rows.map((r) => r.id);
    const posts = await ids('SELECT id FROM post WHERE pozy_updated_at IS NOT NULL ORDER BY id');
    const accounts = await ids('SELECT id FROM account ORDER BY id');
    expect(Object.keys(state.posts).sort()).toEqual(posts);
    expect(Object.keys(state.accounts).sort()).toEqual(accounts);
    for (const [path, id, copy] of [
      ...posts.map((id) => ['posts', id, state.posts[id]] as const),
      ...accounts.map((id) => ['accounts', id, state.accounts[id]] as const),
    ]) {
      const answer = await api(`/${path}/${id}`);
      expect({ id, copy: withoutBookkeeping(copy) }).toEqual({ id, copy: withoutBookkeeping(answer.body) });
    }
    return posts.length + accounts.length;
  }

  /**
   * Changes until the feed holds `entries` more entries: each round, Pozy activity announced by webhooks (duplicated
   * and reordered), and a batch of posts edited in Pozy and written by one replica or the other, as a sweep writes
   * them. `halfway` runs once, midway.
   */
  async function load(rng: Rng, entries: number, halfway?: () => Promise<void>): Promise<void> {
    const target = (await count('SELECT count(*)::int AS n FROM change')) + entries;
    let half = halfway;
    for (let round = 0; ; round += 1) {
      for (let step = 0; step < 100; step += 1) sim.world.randomStep(rng, { silent: false });
      const posts = sim.world.listPosts().filter((post) => !sim.world.wasDeleted(post._id));
      const batch = Array.from({ length: Math.min(BATCH, posts.length) }, () => rng.pick(posts));
      const edited = [...new Set(batch.map((post) => post._id))].map((id) => sim.world.editPost(id, { content: `round ${round} of ${id}` }));
      const read = { readId: randomUUID(), startedAt: new Date(), lastEventAt: null };
      await services[round % 2].app.get(PostMirrorRepository).writeMany(
        DEFAULT_WORKSPACE,
        edited.map((post) => plainToInstance(PozyPostDto, post)),
        read,
      );
      const written = await count('SELECT count(*)::int AS n FROM change');
      if (half !== undefined && written >= target - entries / 2) {
        await half();
        half = undefined;
      }
      if (written >= target) return;
      if (sim.stats().webhooks.pending > 500) {
        await waitFor('the replicas to catch up', async () => (sim.stats().webhooks.pending < 100 ? true : undefined), 120_000);
      }
    }
  }

  beforeAll(async () => {
    db = await createTestDatabase('client_follow');
    dir = mkdtempSync(join(tmpdir(), 'pozy-client-follow-'));
    sim = await PozySimulator.start({
      apiKey: 'sk_sim_client',
      seed: 23,
      timeScale: 10_000,
      // Duplicates (the balancer sends copies to both replicas) and events overtaking each other.
      faults: { duplicateRate: 0.1, reorderMaxDelayMs: 100 },
      rateLimitPerMinute: 100_000,
      webhook: { url: 'http://127.0.0.1:9/not-yet', secret: TEST_WEBHOOK_SECRET },
    });
    const env = {
      ROLE: 'all',
      ADMIN_TOKEN,
      POZY_API_URL: sim.url,
      POZY_API_KEY: sim.apiKey,
      POZY_TIMEOUT_MS: '2000',
      POZY_RATE_LIMIT_PER_MINUTE: '100000',
      POZY_MAX_RETRIES: '8',
      RECONCILE_COALESCE_WINDOW_MS: '50',
      RECONCILE_CLOCK_SKEW_MS: '0',
      CHANGE_RETENTION_DAYS: '1',
    };
    for (let i = 0; i < 2; i += 1) services.push(await startService(db.url, env));
    balancer = await startBalancer(services.map((s) => s.baseUrl));
    sim.setWebhookUrl(`${balancer.url}/webhooks/pozy`);
    sim.world.seedWorld({ profiles: 4, accountsPerProfile: 2, posts: 200 }, new Rng(1));
  }, 120_000);

  afterAll(async () => {
    for (const consumer of consumers) if (consumer.child.exitCode === null && consumer.child.signalCode === null) consumer.child.kill('SIGKILL');
    await sim?.stop();
    await balancer?.close();
    for (const service of services) await service.close();
    await db?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it(`bootstraps on an existing mirror, follows ${CHANGES} changes, is SIGKILLed and resumes, recovers from a 410: equal to the mirror`, async () => {
    // An existing mirror: the seeded world reaches it through webhooks before the consumer first starts.
    await waitFor('the seeded posts in the mirror', async () => ((await count(MIRRORED_POSTS)) >= 150 ? true : undefined), 120_000);
    const first = startConsumer();
    const seeded = await caughtUp(first);
    expect(first.output()).toContain(`no state in ${stateFile()}`);
    expect(first.output()).toMatch(/full read: \d+ posts, \d+ accounts; following after cursor \d+/);
    expect(await expectCopyEqualsMirror(seeded)).toBeGreaterThanOrEqual(150);

    let killedAt: ConsumerState | undefined;
    let restarted: ServiceProcess | undefined;
    await load(new Rng(2), CHANGES, async () => {
      await waitFor('pages of this load', async () => ((first.output().match(/applied \d+ changes/g)?.length ?? 0) >= 3 ? true : undefined), 60_000);
      first.child.kill('SIGKILL');
      expect(await first.exited).toBeNull();
      killedAt = readState();
      restarted = startConsumer();
    });
    const followed = await caughtUp(restarted!);
    expect(restarted!.output()).toContain(`resuming from cursor ${killedAt!.cursor}`);
    expect(restarted!.output()).not.toContain('full read');
    expect(await count('SELECT count(*)::int AS n FROM change')).toBeGreaterThanOrEqual(CHANGES);
    expect(await expectCopyEqualsMirror(followed)).toBeGreaterThan(200);
    // Both replicas answered the consumer's long polls and took Pozy's webhooks.
    expect(balancer.answered.every((n) => n > 0)).toBe(true);

    // Stopped, then everything but the newest entry pruned: its cursor has expired, and it reads the mirror again.
    restarted!.child.kill('SIGTERM');
    expect(await restarted!.exited).toBe(0);
    await load(new Rng(3), 200);
    await waitFor('every reconcile to run', async () => ((await backlog(pool())) === 0 ? true : undefined), 120_000);
    await waitFor('every change to be placed', async () =>
      (await count('SELECT count(*)::int AS n FROM change WHERE position IS NULL')) === 0 ? true : undefined,
    );
    await pool().query(`UPDATE change SET changed_at = now() - interval '2 days'`);
    expect((await api('/admin/retention', { method: 'POST', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).status).toBe(200);
    const resynced = startConsumer();
    await waitFor('the resync', async () => (resynced.output().includes('full read:') ? true : undefined), 60_000);
    expect(resynced.output()).toMatch(new RegExp(`cursor ${followed.cursor} expired \\(oldest kept \\d+\\); resynchronising`));
    await load(new Rng(4), 200);
    await expectCopyEqualsMirror(await caughtUp(resynced));
    resynced.child.kill('SIGTERM');
    expect(await resynced.exited).toBe(0);

    // Never, in any of the three runs, an older version of a resource after a newer one.
    for (const consumer of consumers) expect(consumer.output()).not.toContain('older version handed');
  }, 600_000);
});
