import { HARNESS_ADMIN_TOKEN } from './support/harness';
import { accountEvent, deliver, postEvent } from './support/pozy-events';
import { waitFor } from './support/service';
import { SimulatorSpec, startSpec } from './support/spec';
import type { Version } from '../src/mirror/history/history.service';

/**
 * A post's and an account's history (GET /posts/:id/history, GET /accounts/:id/history) and the version current at
 * an instant (GET /posts/:id?asOf=): the Pozy simulator changes them, its events are delivered to the service, and
 * every read that changed the mirror left one version, which the endpoints answer over real HTTP.
 */

const READ_TOKEN = 'history-read-token';
const READ = { authorization: `Bearer ${READ_TOKEN}` };
const ADMIN = { authorization: `Bearer ${HARNESS_ADMIN_TOKEN}` };
const DEADLINE_MS = 60_000;

interface HistoryPage {
  data: Version[];
  nextCursor: string | null;
}

describe("history: a post's and an account's versions (GET /posts/:id/history, ?asOf=)", () => {
  let harness: SimulatorSpec;
  const base = () => harness.service.baseUrl;
  let postId: string;
  let accountId: string;
  let profileId: string;
  /** The event ids delivered for the post, oldest first, one per change. */
  const postEvents: string[] = [];

  async function get(path: string, headers: Record<string, string> = READ): Promise<{ status: number; text: string; body: Record<string, unknown> }> {
    const response = await fetch(`${base()}${path}`, { headers });
    const text = await response.text();
    return { status: response.status, text, body: JSON.parse(text) as Record<string, unknown> };
  }

  async function history(kind: 'posts' | 'accounts', id: string, query = ''): Promise<HistoryPage> {
    const { status, body } = await get(`/${kind}/${id}/history${query}`);
    expect(status).toBe(200);
    return body as unknown as HistoryPage;
  }

  /** Waits until the resource has `count` versions; answers them. */
  const versions = (kind: 'posts' | 'accounts', id: string, count: number): Promise<Version[]> =>
    waitFor(
      `${count} versions of ${kind} ${id}`,
      async () => {
        const { status, body } = await get(`/${kind}/${id}/history?limit=500`);
        const data = status === 200 ? (body as unknown as HistoryPage).data : [];
        return data.length >= count ? data : undefined;
      },
      DEADLINE_MS,
      100,
    );

  const reconciles = async (key: string): Promise<number> =>
    Number((await harness.service.pool.query<{ n: string }>(`SELECT count(*) AS n FROM reconcile_read WHERE resource_key = $1`, [key])).rows[0].n);

  /** Delivers an event of the post, and remembers its id. */
  async function announce(event = 'post.published'): Promise<void> {
    const delivered = postEvent(postId, event);
    expect((await deliver(base(), delivered)).status).toBe(200);
    postEvents.push(delivered.id);
  }

  beforeAll(async () => {
    harness = await startSpec('history', {
      env: { API_TOKENS: READ_TOKEN, RECONCILE_COALESCE_WINDOW_MS: '50', RETENTION_CRON: 'off' },
      simulator: {
        deliver: false,
      },
    });
    harness.sim.world.seedWorld({ profiles: 1, accountsPerProfile: 1, posts: 0 });
    const [account] = harness.sim.world.listAccounts();
    accountId = account._id;
    profileId = harness.sim.world.profileOfAccount(accountId)!;
    postId = harness.sim.world.createPost({ content: 'version 1', accountIds: [accountId], scheduledFor: Date.now() + 3_600_000 })._id;
  });

  afterAll(async () => {
    await harness?.close();
  });

  it('answers five versions, newest first, for a post changed five times, each with its read, its event and its sequence', async () => {
    await announce('post.scheduled');
    await versions('posts', postId, 1);
    for (let n = 2; n <= 5; n += 1) {
      harness.sim.world.editPost(postId, { content: `version ${n}` });
      await announce();
      await versions('posts', postId, n);
    }

    const { data, nextCursor } = await history('posts', postId);
    expect(nextCursor).toBeNull();
    expect(data.map((v) => v.post?.content)).toEqual(['version 5', 'version 4', 'version 3', 'version 2', 'version 1']);
    expect(data.map((v) => v.sequence)).toEqual([5, 4, 3, 2, 1]);
    // The version carries the sequence GET /posts/:id answered with it, and the feed's entry has it too.
    expect(data.map((v) => v.post?.sequence)).toEqual([5, 4, 3, 2, 1]);
    expect(data.every((v) => v.type === 'post.changed' && v.workspaceId === 'default' && v.id === postId)).toBe(true);
    // Each read that wrote a version was led by the event delivered just before it (and no later one). An earlier one
    // may be listed too: the events since the previous reconcile began, which that reconcile notes once it has written.
    [...data].reverse().forEach((v, i) => {
      expect(v.eventIds).toContain(postEvents[i]);
      expect(postEvents.slice(0, i + 1)).toEqual(expect.arrayContaining(v.eventIds));
    });
    const readAts = data.map((v) => Date.parse(v.readAt));
    expect(readAts).toEqual([...readAts].sort((a, b) => b - a));
    expect(new Set(data.map((v) => v.readId)).size).toBe(5);

    // The newest version is what GET /posts/:id answers now, to the byte, and asOf=now answers the same text.
    const now = await get(`/posts/${postId}`);
    expect(now.body).toEqual(data[0].post);
    const asOfNow = await get(`/posts/${postId}?asOf=${new Date(Date.now() + 1_000).toISOString()}`);
    expect(asOfNow.status).toBe(200);
    expect(asOfNow.text).toBe(now.text);

    // The feed holds the same five changes with the same sequences and the same post.
    const changes = await get(`/changes?after=0&limit=100`);
    const entries = (changes.body.data as Array<{ id: string; sequence: number; post: unknown }>).filter((e) => e.id === postId);
    expect(entries.map((e) => e.sequence)).toEqual([1, 2, 3, 4, 5]);
    expect(entries.map((e) => e.post)).toEqual([...data].reverse().map((v) => v.post));
  });

  it('answers, for an instant between two versions, the older one; before the first, 404', async () => {
    const { data } = await history('posts', postId);
    const [third, second] = [data[2], data[3]];
    const between = new Date(Date.parse(third.readAt) - 1);
    expect(between.getTime()).toBeGreaterThanOrEqual(Date.parse(second.readAt));

    const then = await get(`/posts/${postId}?asOf=${between.toISOString()}`);
    expect(then.status).toBe(200);
    expect(then.body).toEqual(second.post);
    expect(then.body).toMatchObject({ content: 'version 2', sequence: 2 });
    // At the very instant a version was read, it is the one current.
    expect((await get(`/posts/${postId}?asOf=${third.readAt}`)).body).toMatchObject({ sequence: 3 });
    // fields= works with asOf as without.
    expect((await get(`/posts/${postId}?asOf=${between.toISOString()}&fields=id,content,sequence`)).body).toEqual({
      id: postId,
      content: 'version 2',
      sequence: 2,
    });

    const before = await get(`/posts/${postId}?asOf=${new Date(Date.parse(data[4].readAt) - 1).toISOString()}`);
    expect(before.status).toBe(404);
    expect(before.body).toMatchObject({ error: 'not_found' });
  });

  it('adds no version for a read that changed nothing', async () => {
    const readsBefore = await reconciles(`post:${postId}`);
    // An event, but no change in Pozy: the post is read again and found as the mirror holds it.
    const unchanged = postEvent(postId, 'post.published');
    expect((await deliver(base(), unchanged)).status).toBe(200);
    await waitFor(
      'the read for the unchanged post',
      async () => ((await reconciles(`post:${postId}`)) > readsBefore ? true : undefined),
      DEADLINE_MS,
      100,
    );
    const outcome = await harness.service.pool.query<{ outcome: string }>(
      `SELECT outcome FROM reconcile_read WHERE resource_key = $1 ORDER BY id DESC LIMIT 1`,
      [`post:${postId}`],
    );
    expect(outcome.rows[0].outcome).toBe('written');

    const { data } = await history('posts', postId);
    expect(data.map((v) => v.sequence)).toEqual([5, 4, 3, 2, 1]);
    const stored = await harness.service.pool.query<{ n: string }>(
      `SELECT count(*) AS n FROM resource_version WHERE resource_type = 'post' AND resource_id = $1`,
      [postId],
    );
    expect(Number(stored.rows[0].n)).toBe(5);
  });

  it('pages the versions with limit and cursor, newest first, each once', async () => {
    const pages: number[][] = [];
    let cursor: string | null = null;
    do {
      const page: HistoryPage = await history('posts', postId, `?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      pages.push(page.data.map((v) => v.sequence));
      cursor = page.nextCursor;
    } while (cursor);
    expect(pages).toEqual([[5, 4], [3, 2], [1]]);
  });

  it('shows a deletion as a version: type post.deleted, the post with deletedAt, as GET /posts/:id answers it', async () => {
    harness.sim.world.deletePost(postId);
    await announce('post.platform.deleted');
    const data = await versions('posts', postId, 6);
    expect(data[0]).toMatchObject({ sequence: 6, type: 'post.deleted' });
    expect(data[0].eventIds).toContain(postEvents.at(-1));
    expect(data[0].post?.deletedAt).toEqual(expect.any(String));
    expect((await get(`/posts/${postId}`)).body).toEqual(data[0].post);
    // Before the deletion, the post as it was.
    expect((await get(`/posts/${postId}?asOf=${new Date(Date.parse(data[0].readAt) - 1).toISOString()}`)).body).toMatchObject({
      content: 'version 5',
      deletedAt: null,
    });
  });

  it("keeps an account's versions likewise, with asOf", async () => {
    expect((await deliver(base(), accountEvent(accountId, profileId, 'account.connected'))).status).toBe(200);
    const first = await versions('accounts', accountId, 1);
    harness.sim.world.updateAccount(accountId, { displayName: 'Renamed once' });
    const renamed = accountEvent(accountId, profileId, 'account.disconnected');
    expect((await deliver(base(), renamed)).status).toBe(200);
    const data = await versions('accounts', accountId, first.length + 1);

    expect(data[0]).toMatchObject({ type: 'account.changed', id: accountId });
    expect(data[0].eventIds).toContain(renamed.id);
    expect(data[0].account).toMatchObject({ displayName: 'Renamed once' });
    expect(data.map((v) => v.sequence)).toEqual([...data.map((v) => v.sequence)].sort((a, b) => b - a));
    expect((await get(`/accounts/${accountId}`)).body).toEqual(data[0].account);
    const between = new Date(Date.parse(data[0].readAt) - 1).toISOString();
    expect((await get(`/accounts/${accountId}?asOf=${between}`)).body).toEqual(data[1].account);

    // The post's profileIds changed when the mirror first held its account: a version of its own, led by no event of
    // the post and no read of it (eventIds empty).
    const [profiled] = await versions('posts', postId, 7);
    expect(profiled).toMatchObject({ sequence: 7, type: 'post.deleted', eventIds: [] });
    expect(profiled.post?.profileIds).toEqual([profileId]);
    expect((await get(`/posts/${postId}?asOf=${new Date(Date.now() + 1_000).toISOString()}`)).text).toBe((await get(`/posts/${postId}`)).text);
  });

  it('answers a clear 4xx for a bad asOf, cursor or limit, without a token, and in a workspace that does not hold the post', async () => {
    const badAsOf = await get(`/posts/${postId}?asOf=yesterday`);
    expect(badAsOf.status).toBe(400);
    expect(badAsOf.body).toMatchObject({ error: 'invalid_request', details: [expect.objectContaining({ field: 'asOf' })] });
    expect((await get(`/accounts/${accountId}?asOf=2026-13-01`)).body).toMatchObject({ details: [expect.objectContaining({ field: 'asOf' })] });

    const badCursor = await get(`/posts/${postId}/history?cursor=not-a-cursor`);
    expect(badCursor.status).toBe(400);
    expect(badCursor.body).toMatchObject({ error: 'invalid_query', message: expect.stringContaining('cursor') });

    for (const limit of ['0', '501', 'ten']) {
      const badLimit = await get(`/posts/${postId}/history?limit=${limit}`);
      expect(badLimit.status).toBe(400);
      expect(badLimit.body).toMatchObject({ error: 'invalid_request', details: [expect.objectContaining({ field: 'limit' })] });
    }

    for (const path of [`/posts/${postId}/history`, `/accounts/${accountId}/history`, `/posts/${postId}?asOf=2026-01-01T00:00:00Z`]) {
      const anonymous = await get(path, {});
      expect(anonymous.status).toBe(401);
      expect(anonymous.body).toMatchObject({ error: 'missing_token' });
      expect((await get(path, { authorization: 'Bearer wrong' })).body).toMatchObject({ error: 'invalid_token' });
    }

    // A token made for another workspace reads nothing of this one's history: the 404 of GET /posts/:id.
    const made = await fetch(`${base()}/admin/tokens`, {
      method: 'POST',
      headers: { ...ADMIN, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'acme reader', workspaces: ['acme'] }),
    });
    expect(made.status).toBe(201);
    const acme = { authorization: `Bearer ${((await made.json()) as { token: string }).token}` };
    await waitFor('the acme token to be honoured', async () => ((await get('/posts', acme)).status === 200 ? true : undefined), DEADLINE_MS);
    for (const path of [`/posts/${postId}/history`, `/posts/${postId}?asOf=${new Date().toISOString()}`, `/accounts/${accountId}/history`]) {
      const scoped = await get(path, acme);
      expect({ path, status: scoped.status, error: scoped.body.error }).toEqual({ path, status: 404, error: 'not_found' });
    }

    const elsewhere = await get(`/posts/${postId}/history?workspace=elsewhere`);
    expect(elsewhere.status).toBe(404);
    expect(elsewhere.body).toMatchObject({ error: 'not_found' });
    expect((await get(`/posts/${postId}?asOf=${new Date().toISOString()}&workspace=elsewhere`)).status).toBe(404);
    expect((await get(`/posts/not-a-post/history`)).status).toBe(404);
  });

  it("prunes versions superseded before HISTORY_RETENTION_DAYS (30), never a resource's newest", async () => {
    const pool = harness.service.pool;
    // The post's versions but the newest two, and every version of the account, read 40 days ago.
    const postVersions = (await history('posts', postId)).data.map((v) => v.sequence);
    const newest = postVersions[0];
    await pool.query(
      `UPDATE resource_version SET read_at = read_at - interval '40 days' WHERE resource_type = 'post' AND resource_id = $1 AND sequence <= $2`,
      [postId, newest - 2],
    );
    await pool.query(`UPDATE resource_version SET read_at = read_at - interval '40 days' WHERE resource_type = 'account' AND resource_id = $1`, [
      accountId,
    ]);
    const accountVersions = (await history('accounts', accountId)).data.length;

    const response = await fetch(`${base()}/admin/retention`, { method: 'POST', headers: ADMIN });
    expect(response.status).toBe(200);
    const pruned = (await response.json()) as { historyCutoff: string; deleted: { versions: number } };
    // The post's oldest backdated version but one are pruned: the newest backdated one was current until a version read
    // within the window superseded it, so asOf then still answers it. The account keeps its newest alone.
    expect(pruned.deleted.versions).toBe(postVersions.length - 3 + accountVersions - 1);
    expect(Date.parse(pruned.historyCutoff)).toBeLessThan(Date.now() - 29 * 86_400_000);

    const kept = (await history('posts', postId)).data;
    expect(kept.map((v) => v.sequence)).toEqual([newest, newest - 1, newest - 2]);
    const windowOpened = new Date(Date.parse(pruned.historyCutoff) + 1).toISOString();
    expect((await get(`/posts/${postId}?asOf=${windowOpened}`)).body).toEqual(kept[2].post);
    const account = (await history('accounts', accountId)).data;
    expect(account).toHaveLength(1);
    // The newest is kept however old: asOf now still answers what GET /accounts/:id does.
    expect((await get(`/accounts/${accountId}?asOf=${new Date().toISOString()}`)).body).toEqual((await get(`/accounts/${accountId}`)).body);
  });
});
