import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Rng } from '../simulator/faults';
import { ConsumerState, readConsumerState, withoutBookkeeping } from './support/consumer-state';
import { createTestDatabase, TestDatabase } from './support/database';
import { Harness, HARNESS_ADMIN_TOKEN, settled, startHarness } from './support/harness';
import { ServiceProcess, spawnService } from './support/process';
import { waitFor } from './support/service';

const CONSUMER = join(__dirname, '..', 'examples', 'feed-consumer.mjs');
const ADMIN = { authorization: `Bearer ${HARNESS_ADMIN_TOKEN}` };
/**
 * A read token, given to the service as API_TOKENS and to the example as POZY_SYNC_TOKEN: where pozy-sync asks for
 * read tokens, the example's reads (and the test's own) must carry it; where it does not, the header is ignored.
 */
const READ_TOKEN = 'feed_consumer_read_token_0123456789';
const READ = { authorization: `Bearer ${READ_TOKEN}` };

describe('examples/feed-consumer.mjs, run as a process', () => {
  let db: TestDatabase;
  let harness: Harness;
  let dir: string;
  const consumers: ServiceProcess[] = [];
  const world = () => harness.sim.world;
  const api = async (path: string, init: RequestInit = {}) => {
    const response = await fetch(`${harness.service.baseUrl}${path}`, { ...init, headers: { ...READ, ...init.headers } });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };
  const stateFile = () => join(dir, 'state.json');
  const readState = () => readConsumerState(stateFile());

  const startConsumer = (): ServiceProcess => {
    const consumer = spawnService({ POZY_SYNC_URL: harness.service.baseUrl, POZY_SYNC_TOKEN: READ_TOKEN, STATE_FILE: stateFile() }, dir, CONSUMER);
    consumers.push(consumer);
    return consumer;
  };

  const unplaced = async () =>
    (await harness.service.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM change WHERE position IS NULL')).rows[0].n;

  /** The mirror has settled, every change is placed, and the consumer has stored the newest cursor. */
  async function caughtUp(consumer: ServiceProcess): Promise<ConsumerState> {
    await settled(harness);
    await waitFor('every change to be placed', async () => ((await unplaced()) === 0 ? true : undefined));
    const { cursor } = (await api('/changes/head')).body as { cursor: string };
    return waitFor(
      `the consumer to store cursor ${cursor}`,
      async () => {
        if (consumer.child.exitCode !== null) throw new Error(`the consumer exited early:\n${consumer.output()}`);
        const state = readState();
        return state?.cursor === cursor ? state : undefined;
      },
      30_000,
    );
  }

  /** The copy equals the mirror: every post and account the mirror holds, as GET /posts/:id and /accounts/:id answer it. */
  async function expectCopyEqualsMirror(state: ConsumerState): Promise<{ posts: number; accounts: number }> {
    const ids = async (statement: string) => (await harness.service.pool.query<{ id: string }>(statement)).rows.map((r) => r.id);
    // A tombstone (a 404 for a post never held: no Pozy version) is no post of the mirror's: no endpoint answers it.
    const posts = await ids('SELECT id FROM post WHERE pozy_updated_at IS NOT NULL ORDER BY id');
    const accounts = await ids('SELECT id FROM account ORDER BY id');
    expect(Object.keys(state.posts).sort()).toEqual(posts);
    expect(Object.keys(state.accounts).sort()).toEqual(accounts);
    for (const id of posts) {
      const answer = await api(`/posts/${id}`);
      expect(answer.status).toBe(200);
      expect({ id, post: withoutBookkeeping(state.posts[id]) }).toEqual({ id, post: withoutBookkeeping(answer.body) });
    }
    for (const id of accounts) {
      const answer = await api(`/accounts/${id}`);
      expect(answer.status).toBe(200);
      expect({ id, account: withoutBookkeeping(state.accounts[id]) }).toEqual({ id, account: withoutBookkeeping(answer.body) });
    }
    return { posts: posts.length, accounts: accounts.length };
  }

  /** Every feed entry is made two days old and pruned (the newest is always kept); answers the oldest cursor left. */
  async function pruneFeed(): Promise<string> {
    await harness.service.pool.query(`UPDATE change SET changed_at = now() - interval '2 days'`);
    const pruned = await api('/admin/retention', { method: 'POST', headers: ADMIN });
    expect(pruned.status).toBe(200);
    return String(BigInt(((await api('/changes/head')).body as { cursor: string }).cursor) - 1n);
  }

  /** `steps` of Pozy activity that Pozy announces with webhooks, a pause every ten; `halfway` runs in the middle. */
  async function activity(rng: Rng, steps: number, halfway?: () => Promise<void>): Promise<void> {
    for (let i = 0; i < steps; i += 1) {
      world().randomStep(rng, { silent: false });
      if (i === Math.floor(steps / 2)) await halfway?.();
      if (i % 10 === 9) await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  beforeAll(async () => {
    db = await createTestDatabase('feed_consumer');
    dir = mkdtempSync(join(tmpdir(), 'pozy-feed-consumer-'));
    harness = await startHarness(db.url, {
      seed: 12,
      // Late and repeated deliveries, so reads and their changes interleave as in production.
      faults: { duplicateRate: 0.1, reorderMaxDelayMs: 100 },
      env: { CHANGE_RETENTION_DAYS: '1', RECONCILE_COALESCE_WINDOW_MS: '50', API_TOKENS: READ_TOKEN },
    });
  });

  afterAll(async () => {
    for (const consumer of consumers) if (consumer.child.exitCode === null && consumer.child.signalCode === null) consumer.child.kill('SIGKILL');
    await harness?.close();
    await db?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('first start against a mirror whose older feed entries were pruned: head, a full read, then the feed; equal to the mirror', async () => {
    world().seedWorld({ profiles: 3, accountsPerProfile: 2, posts: 40 }, new Rng(1));
    await settled(harness);
    await waitFor('every change to be placed', async () => ((await unplaced()) === 0 ? true : undefined));
    const oldestCursor = await pruneFeed();
    // The feed alone no longer holds these posts: following it from the start would find only the newest change.
    expect((await api('/changes?after=0')).status).toBe(410);
    expect(BigInt(oldestCursor)).toBeGreaterThan(40n);

    const consumer = startConsumer();
    await waitFor('the full read', async () => (consumer.output().includes('full read:') ? true : undefined));
    expect(consumer.output()).toContain(`no state in ${stateFile()}`);
    // Changes while it follows.
    await activity(new Rng(2), 60);
    const state = await caughtUp(consumer);
    const counts = await expectCopyEqualsMirror(state);
    expect(counts.posts).toBeGreaterThan(40);
    expect(counts.accounts).toBeGreaterThanOrEqual(6);
    expect(consumer.output()).toMatch(/applied \d+ changes \(\d+ posts, \d+ accounts\); cursor \d+/);

    // SIGTERM in the middle of a long poll: it stops at once, its cursor stored.
    const stopping = Date.now();
    consumer.child.kill('SIGTERM');
    expect(await consumer.exited).toBe(0);
    expect(Date.now() - stopping).toBeLessThan(5_000);
    expect(consumer.output()).toContain(`stopped at cursor ${state.cursor}`);
  });

  it('killed with SIGKILL halfway through a load, it resumes from its stored cursor and ends equal to the mirror', async () => {
    const consumer = startConsumer();
    const before = readState()!;
    await waitFor('the consumer to resume', async () => (consumer.output().includes('resuming from cursor') ? true : undefined));
    expect(consumer.output()).toContain(`resuming from cursor ${before.cursor}`);

    let killedAt: ConsumerState | undefined;
    let restarted: ServiceProcess | undefined;
    await activity(new Rng(3), 300, async () => {
      // Halfway, once it has applied pages of this load: killed outright, whatever it is doing.
      await waitFor('pages of this load', async () => ((consumer.output().match(/applied \d+ changes/g)?.length ?? 0) >= 3 ? true : undefined));
      consumer.child.kill('SIGKILL');
      expect(await consumer.exited).toBeNull();
      killedAt = readState();
      restarted = startConsumer();
    });
    expect(killedAt).toBeDefined();
    expect(BigInt(killedAt!.cursor)).toBeGreaterThan(BigInt(before.cursor));

    const state = await caughtUp(restarted!);
    expect(restarted!.output()).toContain(`resuming from cursor ${killedAt!.cursor}`);
    expect(restarted!.output()).not.toContain('full read');
    expect(BigInt(state.cursor)).toBeGreaterThan(BigInt(killedAt!.cursor));
    const counts = await expectCopyEqualsMirror(state);
    expect(counts.posts).toBeGreaterThan(60);
    restarted!.child.kill('SIGTERM');
    expect(await restarted!.exited).toBe(0);
  });

  it('a stored cursor older than the feed keeps (410): it reads the mirror whole again and ends equal to it', async () => {
    const stored = readState()!;
    // While it is stopped: changes, then every entry pruned but the newest, so its cursor has expired.
    await activity(new Rng(4), 40);
    await settled(harness);
    await waitFor('every change to be placed', async () => ((await unplaced()) === 0 ? true : undefined));
    const oldestCursor = await pruneFeed();
    expect(BigInt(stored.cursor)).toBeLessThan(BigInt(oldestCursor));

    const consumer = startConsumer();
    await waitFor('the resync', async () => (consumer.output().includes('full read:') ? true : undefined));
    expect(consumer.output()).toContain(`cursor ${stored.cursor} expired (oldest kept ${oldestCursor}); resynchronising`);
    await activity(new Rng(5), 30);
    const state = await caughtUp(consumer);
    await expectCopyEqualsMirror(state);
    consumer.child.kill('SIGTERM');
    expect(await consumer.exited).toBe(0);
  });
});
