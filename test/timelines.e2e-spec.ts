import { plainToInstance } from 'class-transformer';
import { randomUUID } from 'node:crypto';
import { OtlpReceiver } from '../simulator/otlp-collector';
import { DEFAULT_WORKSPACE } from '../src/common/workspace-id';
import { PostMirrorRepository } from '../src/mirror/posts/post-mirror.repository';
import { PozyPostDto } from '../src/pozy/dto/pozy-post.dto';
import { Tracing } from '../src/tracing/tracing.service';
import { createTestDatabase, TestDatabase } from './support/database';
import { Harness, HARNESS_ADMIN_TOKEN, settled, startHarness } from './support/harness';
import { getJson } from './support/http';
import { deliver, postEvent, PozyEvent } from './support/pozy-events';
import { waitFor } from './support/service';
import { TestSubscriber } from './support/subscriber';

/**
 * GET /admin/posts/:id/timeline tells one post's story, entry by entry, from the tables the service already keeps:
 * a post that went through duplicates, a reordering, a 429, a lagging 404 and two notifications, each read with what
 * it changed; then a read refused as older than the mirror's (stale) and a notification given up on (a dead letter).
 */

const ADMIN = { authorization: `Bearer ${HARNESS_ADMIN_TOKEN}` };
const SIM_POST_ROUTE = 'GET /v1/posts/:postId';
const GRACE_MS = 1_500;

interface Entry {
  at: string;
  kind: string;
  traceId: string | null;
  [field: string]: unknown;
}
interface Timeline {
  workspaceId: string;
  resource: string;
  entries: Entry[];
  nextCursor: string | null;
}

describe("timelines: a post's story, entry by entry (GET /admin/posts/:id/timeline)", () => {
  let db: TestDatabase;
  let harness: Harness;
  let subscriber: TestSubscriber;
  let collector: OtlpReceiver;
  const base = () => harness.service.baseUrl;

  const get = (path: string, headers: Record<string, string> = ADMIN) => getJson(base(), path, { headers });

  async function timeline(postId: string, query = ''): Promise<Timeline> {
    const { status, body } = await get(`/admin/posts/${postId}/timeline${query}`);
    expect(status).toBe(200);
    return body as unknown as Timeline;
  }

  /** The whole timeline, a few entries a page. */
  async function walk(postId: string, limit: number): Promise<Entry[]> {
    const entries: Entry[] = [];
    let cursor: string | null = null;
    do {
      const page: Timeline = await timeline(postId, `?limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.entries.length).toBeLessThanOrEqual(limit);
      entries.push(...page.entries);
      cursor = page.nextCursor;
    } while (cursor);
    return entries;
  }

  const reconciles = (entries: Entry[]) => entries.filter((e) => e.kind === 'reconcile');

  async function until(postId: string, what: string, done: (entries: Entry[]) => boolean): Promise<Entry[]> {
    return waitFor(
      what,
      async () => {
        const { entries } = await timeline(postId, '?limit=500');
        return done(entries) ? entries : undefined;
      },
      30_000,
      100,
    );
  }

  beforeAll(async () => {
    db = await createTestDatabase('timelines');
    collector = await OtlpReceiver.start();
    harness = await startHarness(db.url, {
      deliver: false,
      env: {
        READ_LAG_GRACE_MS: String(GRACE_MS),
        OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_BSP_SCHEDULE_DELAY: '100',
      },
    });
    harness.sim.world.seedWorld({ profiles: 1, accountsPerProfile: 1, posts: 0 });
    subscriber = await TestSubscriber.start();
    const created = await fetch(`${base()}/admin/subscriptions`, {
      method: 'POST',
      headers: { ...ADMIN, 'content-type': 'application/json' },
      body: JSON.stringify({ url: subscriber.url, eventTypes: ['post.changed'] }),
    });
    expect(created.status).toBe(201);
  });

  afterAll(async () => {
    await harness?.close();
    await subscriber?.close();
    await collector?.close();
    await db?.drop();
  });

  it('tells the story of duplicates, a reordering, a 429, a lagging 404 and two notifications', async () => {
    const world = harness.sim.world;
    const [account] = world.listAccounts();
    const postId = world.createPost({ content: 'the story', accountIds: [account._id], scheduledFor: Date.now() + 60_000 })._id;

    // Delivered three times: one event, two duplicate copies.
    const first = postEvent(postId, 'post.scheduled');
    for (let i = 0; i < 3; i += 1) await deliver(base(), first);
    await until(postId, 'the first notification', (entries) => entries.some((e) => e.kind === 'notification' && e.state === 'delivered'));

    // Reordered: a newer event, then an older one that arrives after the read it is already reflected in.
    const newer = postEvent(postId, 'post.published');
    await deliver(base(), newer);
    await until(postId, 'the read for the newer event', (entries) => reconciles(entries).length >= 2);
    const older: PozyEvent = { ...postEvent(postId, 'post.scheduled'), timestamp: new Date(Date.now() - 3_600_000).toISOString() };
    await deliver(base(), older);
    await until(postId, 'the skipped read', (entries) => reconciles(entries).some((e) => e.outcome === 'skipped'));

    // A change behind a 429: read once Pozy lets it, retried within the job.
    harness.sim.setFaults({ api429Rate: 1, api429RetryAfter: '1' });
    world.editPost(postId, { content: 'edited behind a 429' });
    await deliver(base(), postEvent(postId, 'post.published'));
    await waitFor('a 429 from Pozy', async () => ((harness.sim.stats().api.byRoute[SIM_POST_ROUTE]?.['429'] ?? 0) > 0 ? true : undefined));
    harness.sim.setFaults({ api429Rate: 0 });
    await until(postId, 'the second notification', (entries) => entries.filter((e) => e.kind === 'notification').length >= 2);

    // Gone from Pozy just after an event said it exists: the 404 is read again until the grace has passed.
    world.deletePost(postId);
    await deliver(base(), postEvent(postId, 'post.platform.published'));
    const entries = await until(postId, 'the deletion believed', (all) => reconciles(all).some((e) => e.outcome === 'deleted'));
    await settled(harness);

    // Oldest first, whatever page size walks it.
    const times = entries.map((e) => Date.parse(e.at));
    expect(times).toEqual([...times].sort((a, b) => a - b));
    expect(await walk(postId, 3)).toEqual((await timeline(postId, '?limit=500')).entries);

    const events = entries.filter((e) => e.kind === 'event');
    expect(events.map((e) => e.eventId)).toEqual([first.id, newer.id, older.id, expect.any(String), expect.any(String)]);
    expect(events[0]).toMatchObject({ type: 'post.scheduled', copies: 3, duplicates: 2, attempt: 1 });
    expect(events.slice(1).map((e) => e.duplicates)).toEqual([0, 0, 0, 0]);

    const reads = reconciles(entries);
    expect(reads[0]).toMatchObject({ outcome: 'written', statusCode: 200, lane: 'realtime', retried: [] });
    const skipped = reads.find((e) => e.outcome === 'skipped')!;
    expect(skipped.detail).toContain('skip rule');
    // The older event came after the read that reflects it, and cost no call.
    expect(Date.parse(skipped.at)).toBeGreaterThan(Date.parse(events[2].at));
    expect(skipped).toMatchObject({ statusCode: null, lane: null });
    // Behind the 429: retried within the request, or (a pause longer than a job waits) postponed and read again.
    const limited = reads.findIndex((e) => (e.retried as string[]).includes('429') || (e.outcome === 'postponed' && e.statusCode === 429));
    expect(limited).toBeGreaterThan(0);
    expect(reads.slice(limited).find((e) => e.outcome === 'written')).toMatchObject({ statusCode: 200, lane: 'realtime' });
    const lagging = reads.filter((e) => e.outcome === 'lagging');
    expect(lagging.length).toBeGreaterThan(0);
    expect(lagging[0]).toMatchObject({ statusCode: 404 });
    expect(lagging[0].detail).toContain('lagging 404');
    expect(reads.at(-1)).toMatchObject({ outcome: 'deleted', statusCode: 404 });

    // What each read changed: the version its write made (its sequence, the one before, the fields that differ), or
    // nothing: a re-read of the version the mirror holds (the newer event's), the skip, the lagging 404s.
    const post = `post:${postId}`;
    expect(reads.filter((e) => e.changed === true).map((e) => [e.outcome, e.versions])).toEqual([
      ['written', [{ resource: post, sequence: 1, previousSequence: null, changedFields: null }]],
      ['written', [{ resource: post, sequence: 2, previousSequence: 1, changedFields: ['content', 'pozyUpdatedAt', 'updatedAt'] }]],
      ['deleted', [{ resource: post, sequence: 3, previousSequence: 2, changedFields: ['deletedAt'] }]],
    ]);
    expect(reads[1]).toMatchObject({ outcome: 'written', statusCode: 200, changed: false, versions: [], readId: expect.any(String) });
    expect(skipped).toMatchObject({ readId: null, changed: false, versions: [] });
    // A lagging answer is read again, not written.
    for (const e of lagging) expect(e).toMatchObject({ readId: null, changed: false, versions: [] });
    expect(reads.filter((e) => e.changed !== true && e.changed !== false)).toEqual([]);
    // The same versions as the history's (by the read's id) and the feed's (by sequence).
    const history = await get(`/posts/${postId}/history`);
    expect(history.status).toBe(200);
    const versions = (history.body.data as { sequence: number; readId: string }[]).map((v) => [v.sequence, v.readId]).reverse();
    expect(versions).toEqual(reads.filter((e) => e.changed).map((e) => [(e.versions as { sequence: number }[])[0].sequence, e.readId]));
    expect(entries.filter((e) => e.kind === 'feed').map((e) => e.sequence)).toEqual([1, 2, 3]);

    // Two changes the subscriber was told of, each with its attempts; the feed has them and the deletion.
    const notifications = entries.filter((e) => e.kind === 'notification');
    expect(notifications.map((n) => [n.type, n.state])).toEqual([
      ['post.changed', 'delivered'],
      ['post.changed', 'delivered'],
    ]);
    for (const n of notifications)
      expect(n.attemptHistory).toEqual([expect.objectContaining({ outcome: 'delivered', statusCode: 204, replay: false })]);
    expect(entries.filter((e) => e.kind === 'feed').map((e) => e.type)).toEqual(['post.changed', 'post.changed', 'post.deleted']);
    expect(subscriber.about(postId)).toHaveLength(2);

    // With traces on, the event and the read it caused share a trace; so do the write and its notification.
    await harness.service.app.get(Tracing).flush();
    expect(events[0].traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(reads[0].traceId).toBe(events[0].traceId);
    expect(notifications[0].traceId).toBe(events[0].traceId);
    expect(collector.trace(events[0].traceId!).some((s) => s.name === 'reconcile post')).toBe(true);
  });

  it("tells a profile's accounts' story too, each read with the accounts it changed", async () => {
    const world = harness.sim.world;
    const profileId = world.createProfile('Timelines')._id;
    const account = world.connectAccount(profileId, 'linkedin', 'timelines');
    const announce = (event: string) =>
      deliver(base(), {
        id: randomUUID(),
        event,
        timestamp: new Date().toISOString(),
        account: { accountId: account._id, profileId, platform: account.platform, username: 'timelines' },
      });
    const afterReads = (n: number) =>
      waitFor(`the profile's read ${n}`, async () => {
        const answer = await get(`/admin/profiles/${profileId}/timeline`);
        return reconciles((answer.body.entries as Entry[] | undefined) ?? []).length >= n ? answer : undefined;
      });
    await announce('account.connected');
    await afterReads(1);
    world.disconnectAccount(account._id);
    await announce('account.disconnected');
    const { status, body } = await afterReads(2);

    expect(status).toBe(200);
    expect(body).toMatchObject({ workspaceId: 'default', resource: `profile:${profileId}` });
    const entries = body.entries as Entry[];
    expect(entries.filter((e) => e.kind === 'event').map((e) => [e.type, e.account])).toEqual([
      ['account.connected', account._id],
      ['account.disconnected', account._id],
    ]);
    // The first read mirrored the account (its first version), the second its disconnection.
    const resource = `account:${account._id}`;
    expect(reconciles(entries)).toEqual([
      expect.objectContaining({ outcome: 'written', statusCode: 200, lane: 'realtime', changed: true }),
      expect.objectContaining({ outcome: 'written', statusCode: 200, lane: 'realtime', changed: true }),
    ]);
    expect(reconciles(entries).map((e) => e.versions)).toEqual([
      [{ resource, sequence: 1, previousSequence: null, changedFields: null }],
      [{ resource, sequence: 2, previousSequence: 1, changedFields: ['isActive', 'needsReconnection'] }],
    ]);
    expect(entries.filter((e) => e.kind === 'feed').map((e) => [e.type, e.resourceId, e.sequence])).toEqual([
      ['account.changed', account._id, 1],
      ['account.changed', account._id, 2],
    ]);
  });

  it("records an operator's resync, and the read it caused on the operator lane", async () => {
    const world = harness.sim.world;
    const [account] = world.listAccounts();
    const postId = world.createPost({ content: 'resynced', accountIds: [account._id], scheduledFor: Date.now() + 60_000 })._id;
    const resync = await fetch(`${base()}/admin/resync/posts/${postId}`, { method: 'POST', headers: ADMIN });
    expect(resync.status).toBe(202);
    const entries = await until(postId, 'the resync read', (all) => reconciles(all).length > 0);
    expect(entries.map((e) => e.kind)).toEqual(expect.arrayContaining(['resync', 'reconcile']));
    expect(entries.findIndex((e) => e.kind === 'resync')).toBeLessThan(entries.findIndex((e) => e.kind === 'reconcile'));
    expect(reconciles(entries)[0]).toMatchObject({ outcome: 'written', lane: 'operator' });
  });

  it('tells why a read changed nothing (older than the read the mirror holds: stale) and what became of a notification given up on (a dead letter)', async () => {
    const world = harness.sim.world;
    const [account] = world.listAccounts();
    const postId = world.createPost({ content: 'raced', accountIds: [account._id], scheduledFor: Date.now() + 60_000 })._id;
    await deliver(base(), postEvent(postId, 'post.scheduled'));
    await until(postId, 'its first notification', (entries) => entries.some((e) => e.kind === 'notification' && e.state === 'delivered'));
    // The subscriber's next answer is for this post's next notification: none of the earlier tests' is still on its way.
    await waitFor('no notification in flight', async () => {
      const { rows } = await harness.service.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM notification WHERE state = 'pending'`);
      return rows[0].n === 0 ? true : undefined;
    });

    // Another read of the edited post (a sweep page, say), sent after this job's read and answered before it, is
    // written first: the job's answer is then older than what the mirror holds, and the guard keeps the newer.
    world.editPost(postId, { content: 'edited, read twice' });
    subscriber.answer([410]);
    const edited = plainToInstance(PozyPostDto, world.getPost(postId));
    const later = { readId: randomUUID(), startedAt: new Date(Date.now() + 60_000), lastEventAt: null };
    expect(await harness.service.app.get(PostMirrorRepository).write(DEFAULT_WORKSPACE, edited, later)).toMatchObject({ changed: 1 });
    await deliver(base(), postEvent(postId, 'post.published'));
    const entries = await until(
      postId,
      'the stale read and the dead letter',
      (all) => reconciles(all).some((e) => e.outcome === 'stale') && all.some((e) => e.kind === 'dead_letter'),
    );

    const [first, stale] = reconciles(entries);
    expect(first).toMatchObject({ outcome: 'written', changed: true, versions: [{ resource: `post:${postId}`, sequence: 1 }] });
    expect(stale).toMatchObject({ outcome: 'stale', statusCode: 200, lane: 'realtime', readId: expect.any(String), changed: false, versions: [] });
    expect(stale.detail).toContain('an older version');
    expect(stale.readId).not.toBe(later.readId);
    // The other read's change has its feed entry and its notification, which the subscriber refused for good (410).
    expect(entries.filter((e) => e.kind === 'feed').map((e) => [e.type, e.sequence])).toEqual([
      ['post.changed', 1],
      ['post.changed', 2],
    ]);
    const refused = entries.filter((e) => e.kind === 'notification').find((e) => e.sequence === 2)!;
    expect(refused).toMatchObject({ state: 'dead', attempts: 1, attemptHistory: [expect.objectContaining({ statusCode: 410, outcome: 'dead' })] });
    const letters = entries.filter((e) => e.kind === 'dead_letter');
    expect(letters).toEqual([
      {
        at: expect.any(String),
        kind: 'dead_letter',
        traceId: null,
        deadLetterId: expect.stringMatching(/^[0-9a-f-]{36}$/),
        letterKind: 'notification',
        resourceKey: `post:${postId}`,
        reason: 'The endpoint answered 410, which retrying cannot change',
        error: expect.stringContaining('410'),
        attempts: 1,
        replayedAt: null,
        resolution: null,
      },
    ]);
    expect(Date.parse(letters[0].at)).toBeGreaterThanOrEqual(Date.parse(refused.at));
    // The letter is the one the admin API lists.
    const listed = await get(`/admin/dead-letters?queue=delivery`);
    expect((listed.body.data as { id: string }[]).map((l) => l.id)).toContain(letters[0].deadLetterId);
  });

  it('refuses bad requests with a 4xx naming the problem, and answers nothing without the admin token', async () => {
    const postId = '66aa01f3c2b1e4d5f6a7b8c9';
    expect((await get(`/admin/posts/${postId}/timeline`, {})).status).toBe(401);
    expect((await get(`/admin/posts/${postId}/timeline`, { authorization: 'Bearer wrong-token-wrong-token' })).status).toBe(403);
    const cases: [string, number, string][] = [
      ['/admin/posts/not-an-id/timeline', 400, 'id'],
      [`/admin/posts/${postId}/timeline?limit=0`, 400, 'limit'],
      [`/admin/posts/${postId}/timeline?limit=501`, 400, 'limit'],
      [`/admin/posts/${postId}/timeline?cursor=garbage`, 400, 'cursor'],
      [`/admin/posts/${postId}/timeline?cursor=${'x'.repeat(600)}`, 400, 'cursor'],
      [`/admin/posts/${postId}/timeline?workspace=Not_A_Slug`, 400, 'workspace'],
      [`/admin/posts/${postId}/timeline?since=yesterday`, 400, 'since'],
      [`/admin/posts/${postId}/timeline?workspace=nowhere`, 404, 'nowhere'],
    ];
    for (const [path, status, named] of cases) {
      const answer = await get(path);
      expect([path, answer.status]).toEqual([path, status]);
      expect(JSON.stringify(answer.body)).toContain(named);
    }
    // A post nothing is known of has an empty story, not an error.
    expect(await timeline(postId)).toEqual({ workspaceId: 'default', resource: `post:${postId}`, entries: [], nextCursor: null });
  });
});
