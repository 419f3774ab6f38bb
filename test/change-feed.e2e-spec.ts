import { randomUUID } from 'node:crypto';
import { connect } from 'node:net';
import { plainToInstance } from 'class-transformer';
import { ChangesService } from '../src/changes/changes.service';
import { transaction as inTransaction } from '../src/database/after-commit';
import { DatabaseService } from '../src/database/database.service';
import { HEADERS_TIMEOUT_MS } from '../src/http/server-timeouts';
import { AccountMirrorRepository } from '../src/mirror/accounts/account-mirror.repository';
import { PostMirrorRepository, PostWriteResult } from '../src/mirror/posts/post-mirror.repository';
import { PozyAccountDto } from '../src/pozy/dto/pozy-account.dto';
import { PozyPostDto } from '../src/pozy/dto/pozy-post.dto';
import { Rng } from '../simulator/faults';
import { PozySimulator } from '../simulator/simulator';
import { Balancer, startBalancer } from './support/balancer';
import { createTestDatabase, TestDatabase } from './support/database';
import { FeedFollower, FeedItem } from './support/feed-follower';
import { backlog, HARNESS_ADMIN_TOKEN, settled } from './support/harness';
import { getJson, request } from './support/http';
import { RunningService, startService, TEST_WEBHOOK_SECRET, waitFor } from './support/service';
import { SimulatorSpec, startSpec } from './support/spec';
import { DEFAULT_WORKSPACE } from '../src/common/workspace-id';

const ADMIN = { authorization: `Bearer ${HARNESS_ADMIN_TOKEN}` };

/** Entries the sequencer has not placed yet: none once every committed change is readable. */
async function unplaced(service: RunningService): Promise<number> {
  return (await service.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM change WHERE position IS NULL')).rows[0].n;
}

/**
 * Bookkeeping that a read moves without changing the resource (so without a feed entry): when it was last read, and
 * the newest event it reflects. Everything else must be equal.
 */
const withoutBookkeeping = (body: Record<string, unknown> | undefined) =>
  body && Object.fromEntries(Object.entries(body).filter(([key]) => key !== 'syncedAt' && key !== 'lastEventAt'));

/** The follower's copy equals the mirror: every post and account the mirror holds, as the endpoints answer it. */
async function expectCopyEqualsMirror(service: RunningService, follower: FeedFollower): Promise<number> {
  // A tombstone (a 404 for a post never held: no Pozy version) is no post of the mirror's: no endpoint answers it.
  const posts = (await service.pool.query<{ id: string }>('SELECT id FROM post WHERE pozy_updated_at IS NOT NULL ORDER BY id')).rows.map((r) => r.id);
  const accounts = (await service.pool.query<{ id: string }>('SELECT id FROM account ORDER BY id')).rows.map((r) => r.id);
  expect([...follower.state.copy.keys()].sort()).toEqual([...posts.map((id) => `post:${id}`), ...accounts.map((id) => `account:${id}`)].sort());
  for (const id of posts) {
    const answer = await getJson(service.baseUrl, `/posts/${id}`);
    expect({ id, post: withoutBookkeeping(follower.state.copy.get(`post:${id}`)?.post) }).toEqual({ id, post: withoutBookkeeping(answer.body) });
  }
  for (const id of accounts) {
    const answer = await getJson(service.baseUrl, `/accounts/${id}`);
    expect({ id, account: withoutBookkeeping(follower.state.copy.get(`account:${id}`)?.account) }).toEqual({
      id,
      account: withoutBookkeeping(answer.body),
    });
  }
  return posts.length + accounts.length;
}

describe('GET /changes on one replica', () => {
  let harness: SimulatorSpec;
  let profileId: string;
  let otherProfileId: string;
  let instagram: string;
  const world = () => harness.sim.world;
  const base = () => harness.service.baseUrl;
  const api = (path: string, init?: RequestInit) => request(base(), path, init);
  const repository = () => harness.service.app.get(PostMirrorRepository);
  const read = () => ({ readId: randomUUID(), startedAt: new Date(), lastEventAt: null });
  const dto = (postId: string) => plainToInstance(PozyPostDto, world().getPost(postId));
  const head = async () => (await api('/changes/head')).body.cursor as string;

  beforeAll(async () => {
    // Pozy's webhooks are not delivered: the tests write the mirror themselves, so they know what changed when.
    harness = await startSpec('change_feed', { simulator: { deliver: false }, env: { CHANGE_RETENTION_DAYS: '1' } });
    profileId = world().createProfile('Feed')._id;
    otherProfileId = world().createProfile('Other')._id;
    instagram = world().connectAccount(profileId, 'instagram', 'feed.insta')._id;
    world().connectAccount(otherProfileId, 'linkedin', 'other-li');
  });

  afterAll(async () => {
    await harness?.close();
  });

  it('starts empty: head 0, and a first call without a cursor answers nothing with cursor 0', async () => {
    expect(await api('/changes/head')).toEqual({ status: 200, body: { cursor: '0' } });
    expect(await api('/changes')).toEqual({ status: 200, body: { data: [], nextCursor: '0' } });
  });

  it('records account changes, with the account exactly as GET /accounts/:id answers it', async () => {
    // The harness does not deliver webhooks: a resync reads each profile's accounts from Pozy and writes them.
    for (const id of [profileId, otherProfileId]) {
      expect((await api(`/admin/resync/profiles/${id}/accounts`, { method: 'POST', headers: ADMIN })).status).toBe(202);
    }
    await settled(harness);
    await waitFor('both accounts placed', async () => ((await head()) === '2' ? true : undefined));
    const follower = new FeedFollower([base()]);
    await follower.drain();
    expect([...follower.state.copy.values()].map((item) => item.type)).toEqual(['account.changed', 'account.changed']);
    const account = follower.state.copy.get(`account:${instagram}`);
    expect(account).toMatchObject({ type: 'account.changed', id: instagram, sequence: 1 });
    expect(account?.account).toEqual((await api(`/accounts/${instagram}`)).body);
    expect(account?.account).toMatchObject({ id: instagram, profileId, username: 'feed.insta' });
  });

  it('records each real change once, in order, with the post exactly as GET /posts/:id answered it then', async () => {
    const from = BigInt(await head());
    const at = (n: number) => String(from + BigInt(n));
    const post = world().createPost({ content: 'first', accountIds: [instagram] });
    const first = await repository().write(DEFAULT_WORKSPACE, dto(post._id), read());
    expect(first.changed).toBe(1);
    const asFirstWritten = (await api(`/posts/${post._id}`)).body;
    // A re-read of the same version changes nothing: no feed entry.
    expect((await repository().write(DEFAULT_WORKSPACE, dto(post._id), read())).changed).toBe(0);
    world().editPost(post._id, { content: 'second' });
    await repository().write(DEFAULT_WORKSPACE, dto(post._id), read());
    const asSecondWritten = (await api(`/posts/${post._id}`)).body;

    await waitFor('both changes to be placed', async () => ((await unplaced(harness.service)) === 0 ? true : undefined));
    const items = await api(`/changes?after=${from}`);
    expect(items.status).toBe(200);
    const data = items.body.data as FeedItem[];
    expect(data.map((item) => [item.type, item.id, item.sequence])).toEqual([
      ['post.changed', post._id, 1],
      ['post.changed', post._id, 2],
    ]);
    expect(data.map((item) => item.cursor)).toEqual([at(1), at(2)]);
    expect(data[0].post).toEqual(asFirstWritten);
    expect(data[1].post).toEqual(asSecondWritten);
    expect(data[1].post).toMatchObject({ content: 'second', profileIds: [profileId] });
    expect(Date.parse(data[1].changedAt)).toBeGreaterThanOrEqual(Date.parse(data[0].changedAt));
    expect(items.body.nextCursor).toBe(at(2));
    expect(await head()).toBe(at(2));

    // Deleted, then the same deletion read again: one post.deleted.
    world().deletePost(post._id);
    await repository().markDeleted(DEFAULT_WORKSPACE, post._id, read());
    await repository().markDeleted(DEFAULT_WORKSPACE, post._id, read());
    await waitFor('the deletion to be placed', async () => ((await head()) === at(3) ? true : undefined));
    const deleted = await api(`/changes?after=${at(2)}`);
    expect(deleted.body).toEqual({
      data: [expect.objectContaining({ cursor: at(3), type: 'post.deleted', id: post._id, sequence: 3 })],
      nextCursor: at(3),
    });
    // The second mark changed nothing but the bookkeeping: when it was read.
    expect(withoutBookkeeping((deleted.body.data as FeedItem[])[0].post)).toEqual(withoutBookkeeping((await api(`/posts/${post._id}`)).body));
  });

  it('filters by types, profileId and platform, and moves the cursor past what a filter skipped', async () => {
    const from = await head();
    const mine = world().createPost({ content: 'mine', accountIds: [instagram] });
    const theirs = world().createPost({
      content: 'theirs',
      accountIds: [
        world()
          .listAccounts()
          .find((a) => a.username === 'other-li')!._id,
      ],
    });
    await repository().write(DEFAULT_WORKSPACE, dto(mine._id), read());
    await repository().write(DEFAULT_WORKSPACE, dto(theirs._id), read());
    await waitFor('both placed', async () => ((await unplaced(harness.service)) === 0 ? true : undefined));
    const newest = await head();

    const ids = async (query: string) => {
      const answer = await api(`/changes?after=${from}&${query}`);
      expect(answer.status).toBe(200);
      return { ids: (answer.body.data as FeedItem[]).map((item) => item.id), nextCursor: answer.body.nextCursor };
    };
    expect(await ids(`profileId=${profileId}`)).toEqual({ ids: [mine._id], nextCursor: newest });
    expect(await ids(`profileId=${otherProfileId}`)).toEqual({ ids: [theirs._id], nextCursor: newest });
    expect(await ids('platform=linkedin')).toEqual({ ids: [theirs._id], nextCursor: newest });
    // Nothing matches: the answer is empty, and its cursor has moved past what was looked at.
    expect(await ids('types=post.deleted,account.removed')).toEqual({ ids: [], nextCursor: newest });
    expect(await ids('types=post.changed&platform=instagram')).toEqual({ ids: [mine._id], nextCursor: newest });
  });

  it('a change whose transaction commits late still comes after the cursor a consumer already read past', async () => {
    const late = world().createPost({ content: 'late', accountIds: [instagram] });
    const early = world().createPost({ content: 'early', accountIds: [instagram] });
    const database = harness.service.app.get(DatabaseService);
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let inserted!: (result: PostWriteResult) => void;
    const lateWritten = new Promise<PostWriteResult>((resolve) => (inserted = resolve));
    // The late change is inserted first, and its transaction stays open.
    const transaction = inTransaction(database.db, async (trx) => {
      inserted(await repository().writeMany(DEFAULT_WORKSPACE, [dto(late._id)], read(), trx));
      await held;
    });
    expect((await lateWritten).changed).toBe(1);
    // The cursor is taken before the early write: the sequencer may place it before a head read afterwards answers.
    const follower = new FeedFollower([base()], { cursor: await head(), copy: new Map() });
    await repository().write(DEFAULT_WORKSPACE, dto(early._id), read());

    let readPast: string;
    try {
      await waitFor('the early change', async () => (await follower.poll(), follower.state.copy.has(`post:${early._id}`) ? true : undefined));
      expect(follower.state.copy.has(`post:${late._id}`)).toBe(false);
      readPast = follower.state.cursor!;
    } finally {
      release();
      await transaction;
    }
    // The race is real: the late entry was inserted before the early one, so a feed in insertion order would have
    // placed it first, behind the cursor the consumer had already read past.
    const order = await harness.service.pool.query<{ resource_id: string }>(
      'SELECT resource_id FROM change WHERE resource_id = ANY($1) ORDER BY id',
      [[late._id, early._id]],
    );
    expect(order.rows.map((r) => r.resource_id)).toEqual([late._id, early._id]);
    await waitFor('the late change', async () => (await follower.poll(), follower.state.copy.has(`post:${late._id}`) ? true : undefined));
    expect(BigInt(follower.state.copy.get(`post:${late._id}`)!.cursor)).toBeGreaterThan(BigInt(readPast));
    expect(follower.outOfOrder).toEqual([]);
    expect(follower.cursorsNotGrowing).toEqual([]);
  });

  it('a post written while its account is being mirrored for the first time gets that profile: its write waits for the account', async () => {
    const thirdProfileId = world().createProfile('Third')._id;
    const account = world().connectAccount(thirdProfileId, 'tiktok', 'third.tok');
    const post = world().createPost({ content: 'on a new account', accountIds: [account._id] });
    const from = await head();
    const database = harness.service.app.get(DatabaseService);
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let accountWritten!: () => void;
    const written = new Promise<void>((resolve) => (accountWritten = resolve));
    // The account's first write stays uncommitted while the post is written: neither sees the other's row.
    const accountTransaction = inTransaction(database.db, async (trx) => {
      const accountRead = { readId: randomUUID(), startedAt: new Date(), lastEventAt: new Map<string, Date>() };
      await harness.service.app
        .get(AccountMirrorRepository)
        .writeAccounts(DEFAULT_WORKSPACE, [plainToInstance(PozyAccountDto, world().getAccount(account._id))], accountRead, trx);
      accountWritten();
      await held;
    });
    await written;
    let postWriteDone = false;
    const postWrite = repository()
      .write(DEFAULT_WORKSPACE, dto(post._id), read())
      .finally(() => (postWriteDone = true));
    try {
      // The post's write waits on the lock the account's first write holds until it commits.
      await waitFor('the post write waiting on the account', async () => {
        const rows = await harness.service.pool.query(
          `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event = 'advisory' AND query LIKE '%pg_advisory_xact_lock_shared%'`,
        );
        return rows.rowCount! > 0 ? true : undefined;
      });
      expect(postWriteDone).toBe(false);
      const early = await harness.service.pool.query('SELECT 1 FROM change WHERE resource_id = $1', [post._id]);
      expect(early.rowCount).toBe(0);
    } finally {
      release();
      await accountTransaction;
    }
    await postWrite;
    const answer = (await api(`/posts/${post._id}`)).body;
    expect(answer).toMatchObject({ profileIds: [thirdProfileId], sequence: 1 });
    const entries = await harness.service.pool.query<{ profile_ids: string[] }>('SELECT profile_ids FROM change WHERE resource_id = $1', [post._id]);
    expect(entries.rows).toEqual([{ profile_ids: [thirdProfileId] }]);
    await waitFor('the entries placed', async () => ((await unplaced(harness.service)) === 0 ? true : undefined));
    const follower = new FeedFollower([base()], { cursor: from, copy: new Map() });
    await follower.drain();
    expect(withoutBookkeeping(follower.state.copy.get(`post:${post._id}`)?.post)).toEqual(withoutBookkeeping(answer));
    expect(follower.outOfOrder).toEqual([]);
  });

  it('wait: answers as soon as a change comes, and at its limit without one', async () => {
    const from = await head();
    const quiet = Date.now();
    const empty = await api(`/changes?after=${from}&wait=1`);
    expect(Date.now() - quiet).toBeGreaterThanOrEqual(950);
    expect(empty).toEqual({ status: 200, body: { data: [], nextCursor: from } });

    const post = world().createPost({ content: 'awaited', accountIds: [instagram] });
    const started = Date.now();
    const waiting = api(`/changes?after=${from}&wait=30`);
    setTimeout(() => void repository().write(DEFAULT_WORKSPACE, dto(post._id), read()), 300);
    const answer = await waiting;
    expect(answer.status).toBe(200);
    expect((answer.body.data as FeedItem[]).map((item) => item.id)).toEqual([post._id]);
    // Far sooner than the 30 s it was allowed to wait.
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it.each([
    ['after', 'after=abc'],
    ['after', 'after=-1'],
    ['after', 'after=1.5'],
    ['after', 'after=1234567890123456789'],
    ['limit', 'limit=0'],
    ['limit', 'limit=1001'],
    ['limit', 'limit=ten'],
    ['types', 'types=post.created'],
    ['types', 'types=post.changed,'],
    ['wait', 'wait=31'],
    ['wait', 'wait=-1'],
    ['wait', 'wait=soon'],
    ['profileId', `profileId=${'x'.repeat(201)}`],
  ])('refuses a bad %s (%s) with 400 naming it', async (field, query) => {
    const answer = await api(`/changes?${query}`);
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ statusCode: 400, error: 'invalid_request' });
    expect((answer.body.details as Array<{ field: string }>).map((d) => d.field)).toContain(field);
  });

  it('refuses an unknown parameter', async () => {
    const answer = await api('/changes?since=1');
    expect(answer.status).toBe(400);
    expect(answer.body.message).toContain('since');
  });

  it('answers 410 cursor_expired for a cursor older than CHANGE_RETENTION_DAYS keeps, naming the oldest cursor', async () => {
    const newest = BigInt(await head());
    expect(newest).toBeGreaterThan(4n);
    // Every change but the last two is two days old; the retention window is one day.
    await harness.service.pool.query(`UPDATE change SET changed_at = now() - interval '2 days' WHERE position <= $1`, [String(newest - 2n)]);
    const pruned = await api('/admin/retention', { method: 'POST', headers: ADMIN });
    expect(pruned.status).toBe(200);
    expect((pruned.body.deleted as Record<string, number>).changes).toBe(Number(newest - 2n));

    const oldestCursor = String(newest - 2n);
    const expired = await api('/changes?after=0');
    expect(expired.status).toBe(410);
    expect(expired.body).toMatchObject({
      statusCode: 410,
      error: 'cursor_expired',
      details: { oldestCursor, resync: expect.stringContaining('GET /changes/head') },
    });
    expect(expired.body.message).toContain(oldestCursor);
    expect((await api(`/changes?after=${newest - 3n}`)).status).toBe(410);
    // The oldest cursor still works, and a first call without a cursor starts there.
    const fromOldest = await api(`/changes?after=${oldestCursor}`);
    expect(fromOldest.status).toBe(200);
    expect((fromOldest.body.data as FeedItem[]).map((item) => item.cursor)).toEqual([String(newest - 1n), String(newest)]);
    expect((await api('/changes')).body).toEqual(fromOldest.body);

    // The newest entry is kept however old, so the feed's place is never lost.
    await harness.service.pool.query(`UPDATE change SET changed_at = now() - interval '2 days'`);
    await api('/admin/retention', { method: 'POST', headers: ADMIN });
    expect(await head()).toBe(String(newest));
    expect((await api(`/changes?after=${newest}`)).body).toEqual({ data: [], nextCursor: String(newest) });
    expect((await api(`/changes?after=${newest - 1n}`)).status).toBe(200);
    expect((await api(`/changes?after=${newest - 2n}`)).status).toBe(410);
  });
});

describe('GET /changes with two replicas writing at once', () => {
  const REPLICAS = ['A', 'B'] as const;
  let db: TestDatabase;
  let sim: PozySimulator;
  let balancer: Balancer | undefined;
  const services: RunningService[] = [];

  afterAll(async () => {
    await sim?.stop();
    await balancer?.close();
    for (const service of services) await service.close();
    await db?.drop();
  });

  it('a consumer following from the start, and one stopped and resumed from its stored cursor, end equal to the mirror', async () => {
    db = await createTestDatabase('change_feed_replicas');
    sim = await PozySimulator.start({
      apiKey: 'sk_sim_feed',
      seed: 4_242,
      timeScale: 10_000,
      // Duplicates sent at once (the balancer sends them to both replicas) and events overtaking each other.
      faults: { duplicateRate: 0.2, reorderMaxDelayMs: 150 },
      rateLimitPerMinute: 100_000,
      webhook: { url: 'http://127.0.0.1:9/not-yet', secret: TEST_WEBHOOK_SECRET },
    });
    const env = {
      ROLE: 'all',
      POZY_API_URL: sim.url,
      POZY_API_KEY: sim.apiKey,
      POZY_TIMEOUT_MS: '1000',
      POZY_RATE_LIMIT_PER_MINUTE: '100000',
      POZY_MAX_RETRIES: '8',
      // Short: many reads of the same posts, by both replicas.
      RECONCILE_COALESCE_WINDOW_MS: '50',
      RECONCILE_CLOCK_SKEW_MS: '0',
    };
    const changedBy: Record<string, number> = { A: 0, B: 0 };
    for (const replica of REPLICAS) {
      const service = await startService(db.url, env);
      services.push(service);
      // Counts each replica's writes that changed something: both must write for the test to mean anything.
      const repository = service.app.get(PostMirrorRepository);
      const writeMany = repository.writeMany.bind(repository);
      jest.spyOn(repository, 'writeMany').mockImplementation(async (...args) => {
        const result = await writeMany(...args);
        changedBy[replica] += result.changed;
        return result;
      });
    }
    balancer = await startBalancer(services.map((s) => s.baseUrl));
    sim.setWebhookUrl(`${balancer.url}/webhooks/pozy`);
    const urls = services.map((s) => s.baseUrl);

    // Both consumers follow while the load runs, with long polls, from either replica in turn.
    const whole = new FeedFollower(urls);
    const halfway = new FeedFollower(urls);
    let loading = true;
    let stopHalfway = false;
    const follow = async (follower: FeedFollower, until: () => boolean) => {
      let call = 0;
      while (!until()) await follower.poll(1, 50, call++);
    };
    const following = follow(whole, () => !loading);
    const followingHalf = follow(halfway, () => stopHalfway);

    const world = sim.world;
    world.seedWorld({ profiles: 3, accountsPerProfile: 2, posts: 15 });
    const rng = new Rng(4_242);
    const STEPS = 300;
    for (let i = 0; i < STEPS; i += 1) {
      world.randomStep(rng, { silent: false });
      if (i === STEPS / 2) {
        // Stopped once it holds part of the load, however slow the machine is to place the first entries.
        await waitFor('the stopped consumer to receive part of the load', async () => (halfway.received > 0 ? true : undefined), 60_000);
        stopHalfway = true;
      }
      if (i % 10 === 9) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await followingHalf;
    // What the stopped consumer stored: its cursor and its copy. It starts again as a new process would.
    const stored = { cursor: halfway.state.cursor, copy: new Map(halfway.state.copy) };
    expect(stored.cursor).toBeDefined();

    await waitFor('the simulator to deliver everything', async () => (sim.stats().webhooks.pending === 0 ? true : undefined), 120_000);
    await waitFor('every reconcile to run', async () => ((await backlog(services[0].pool)) === 0 ? true : undefined), 60_000);
    await waitFor('every change to be placed', async () => ((await unplaced(services[0])) === 0 ? true : undefined));
    loading = false;
    await following;

    await whole.drain();
    const resumed = new FeedFollower(urls, stored);
    await resumed.drain();

    expect(changedBy.A).toBeGreaterThan(0);
    expect(changedBy.B).toBeGreaterThan(0);
    for (const follower of [whole, resumed]) {
      expect(follower.outOfOrder).toEqual([]);
      expect(follower.cursorsNotGrowing).toEqual([]);
      expect(await expectCopyEqualsMirror(services[0], follower)).toBeGreaterThan(20);
    }
    // The resumed consumer read only what came after its stored cursor.
    const total = (await services[0].pool.query<{ n: number }>('SELECT count(*)::int AS n FROM change')).rows[0].n;
    expect(whole.received).toBe(total);
    expect(resumed.received).toBeLessThan(total);
    // Two services, the simulator and 300 steps on two cores beside other suites: the waits above, not speed, bound it.
  }, 300_000);
});

describe('GET /changes long polls on shutdown', () => {
  let db: TestDatabase;

  afterAll(async () => {
    await db?.drop();
  });

  it('answers a waiting long poll at once when the service stops, rather than holding the shutdown for its wait', async () => {
    db = await createTestDatabase('change_feed_shutdown');
    const service = await startService(db.url);
    const started = Date.now();
    const waiting = getJson(service.baseUrl, '/changes?wait=30');
    await waitFor('the long poll to wait', async () => (service.app.get(ChangesService).waiting === 1 ? true : undefined));
    await service.close();
    expect(await waiting).toEqual({ status: 200, body: { data: [], nextCursor: '0' } });
    expect(Date.now() - started).toBeLessThan(15_000);
  });

  it('stops before the wait of a long poll its client aborted would have ended, after that client read a page', async () => {
    const service = await startService(db.url);
    const read = await getJson(service.baseUrl, '/posts?includeDeleted=true&limit=500');
    expect(read).toMatchObject({ status: 200, body: { data: [] } });
    const { cursor } = (await getJson(service.baseUrl, '/changes/head')).body as { cursor: string };
    // The long poll reuses a kept-alive connection, whose answers said the service keeps it for 72 s.
    await new Promise((resolve) => setTimeout(resolve, 100));
    const abort = new AbortController();
    const started = Date.now();
    const given = fetch(`${service.baseUrl}/changes?after=${cursor}&wait=25`, { signal: abort.signal }).then(
      () => 'answered',
      (error: { name?: string }) => error.name,
    );
    await waitFor('the long poll to wait', async () => (service.app.get(ChangesService).waiting === 1 ? true : undefined));
    abort.abort();
    expect(await given).toBe('AbortError');
    // undici connects again for the request it aborted once the service closes that connection (answering the long
    // poll on shutdown), and sends nothing on it: a connection Node's close leaves open until its idle timeout.
    await service.close();
    expect(Date.now() - started).toBeLessThan(25_000);
  });

  it('stops without waiting for a connection that has sent no request', async () => {
    const service = await startService(db.url);
    const { port } = new URL(service.baseUrl);
    const socket = connect(Number(port), '127.0.0.1');
    await new Promise((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    const ended = new Promise((resolve) => socket.once('close', resolve));
    const started = Date.now();
    await service.close();
    await ended;
    // Well before the headers timeout (5 s), which Node stops enforcing once close began.
    expect(Date.now() - started).toBeLessThan(HEADERS_TIMEOUT_MS);
  });
});
