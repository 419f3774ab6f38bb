import type { Account, PlatformTarget, Post } from '../simulator/world/pozy-shapes';
import { UNKNOWN_ACCOUNT_FIELD, UNKNOWN_POST_FIELD, UNKNOWN_TARGET_FIELD } from '../simulator/world/pozy-shapes';
import { ACCOUNT_FIELD_ORDER } from '../src/mirror/accounts/account-fields';
import { POST_FIELD_ORDER } from '../src/mirror/posts/post-fields';
import type { FieldOrder } from '../src/mirror/whole-object';
import { HARNESS_ADMIN_TOKEN, settled } from './support/harness';
import { waitFor } from './support/service';
import { TestSubscriber } from './support/subscriber';
import { SimulatorSpec, startSpec } from './support/spec';

const ADMIN = { authorization: `Bearer ${HARNESS_ADMIN_TOKEN}` };
const JSON_ADMIN = { ...ADMIN, 'content-type': 'application/json' };
const POST_BOOKKEEPING = ['workspaceId', 'profileIds', 'pozyCreatedAt', 'pozyUpdatedAt', 'lastEventAt', 'syncedAt', 'deletedAt', 'sequence'];
const ACCOUNT_BOOKKEEPING = ['workspaceId', 'lastEventAt', 'syncedAt', 'removedAt', 'sequence'];

const plainId = (target: PlatformTarget) => (typeof target.accountId === 'string' ? target.accountId : target.accountId._id);

/** Pozy's post as the mirror promises to answer it: `_id` as `id`, every target's accountId the plain id. */
function asMirrored(post: Post): Record<string, unknown> {
  const { _id, ...fields } = post;
  return { id: _id, ...fields, platforms: post.platforms.map((t) => ({ ...t, accountId: plainId(t) })) };
}

function asMirroredAccount(account: Account): Record<string, unknown> {
  const { _id, ...fields } = account;
  return { id: _id, ...fields, profileId: account.profileId._id };
}

/** The documented order of an answer's fields: Pozy's known ones in their order, those pozy-sync does not know, the mirror's. */
function expectDocumentedOrder(body: Record<string, unknown>, order: FieldOrder, unknownField: string): void {
  const keys = Object.keys(body);
  const unknown = keys.filter((key) => !order.pozy.includes(key) && !order.mirror.includes(key));
  expect(unknown).toContain(unknownField);
  expect(keys).toEqual([...order.pozy.filter((key) => key in body), ...unknown, ...order.mirror.filter((key) => key in body)]);
}

const without = (body: Record<string, unknown>, keys: string[]) => Object.fromEntries(Object.entries(body).filter(([key]) => !keys.includes(key)));

describe('the whole post and the whole account: every field Pozy answers, unknown ones included', () => {
  let harness: SimulatorSpec;
  let subscriber: TestSubscriber;
  let profileId: string;
  let instagram: string;
  let linkedin: string;
  const world = () => harness.sim.world;
  const api = async (path: string, init: RequestInit = {}) => {
    const response = await fetch(`${harness.service.baseUrl}${path}`, init);
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };
  const resync = async (postId: string) => expect((await api(`/admin/resync/posts/${postId}`, { method: 'POST', headers: ADMIN })).status).toBe(202);

  beforeAll(async () => {
    harness = await startSpec('whole_objects', { simulator: {} });
    world().setUnknownFields(true);
    profileId = world().createProfile('Whole')._id;
    instagram = world().connectAccount(profileId, 'instagram', 'whole.insta', 'Whole Insta')._id;
    linkedin = world().connectAccount(profileId, 'linkedin', 'whole-li', 'Whole LinkedIn')._id;
    await settled(harness);
    subscriber = await TestSubscriber.start();
    const created = await api('/admin/subscriptions', {
      method: 'POST',
      headers: JSON_ADMIN,
      body: JSON.stringify({ url: subscriber.url, eventTypes: ['post.changed'] }),
    });
    expect(created.status).toBe(201);
  });

  afterAll(async () => {
    await subscriber?.close();
    await harness?.close();
  });

  /** A post with every field of Pozy's contract, published on LinkedIn and failed on Instagram (a Meta platform). */
  async function wholePost(): Promise<Post> {
    const post = world().createPost({
      title: 'Spring sale',
      content: 'Our spring sale starts today.',
      accountIds: [instagram, linkedin],
      scheduledFor: Date.now() + 60_000,
      timezone: 'Europe/Berlin',
      mediaItems: [
        { type: 'image', url: 'https://media.example/a.jpg', altText: 'A shoe' },
        { type: 'video', url: 'https://media.example/b.mp4', thumbnail: 'https://media.example/b.jpg' },
        { type: 'gif', url: 'https://media.example/c.gif' },
        { type: 'document', url: 'https://media.example/d.pdf' },
      ],
      tags: ['launch', 'spring'],
      hashtags: ['#spring', '#sale'],
      mentions: ['@pozy'],
      visibility: 'unlisted',
      metadata: { crmId: 'A-1042', campaign: 'spring', nested: { owner: 'marketing', ids: [1, 2] } },
      recycling: { enabled: true, intervalDays: 30 },
      recycledFromPostId: '66aa01f3c2b1e4d5f6a7b8c0',
      queuedFromProfile: profileId,
      queueId: 'queue_1',
    });
    world().publishPost(post._id, { [instagram]: 'failed' });
    await settled(harness);
    return world().getPost(post._id)!;
  }

  it('GET /posts/:id answers every field equal to Pozy’s, a field pozy-sync has never seen included', async () => {
    const pozy = await wholePost();
    expect(pozy[UNKNOWN_POST_FIELD as keyof Post]).toBeDefined();
    const failed = pozy.platforms.find((t) => t.status === 'failed')!;
    expect(failed).toMatchObject({ errorCategory: expect.any(String) as string, platformError: expect.any(Object) as object });

    const { status, body } = await api(`/posts/${pozy._id}`);

    expect(status).toBe(200);
    expect(without(body, POST_BOOKKEEPING)).toEqual(asMirrored(pozy));
    expect(body).toMatchObject({ profileIds: [profileId], pozyUpdatedAt: pozy.updatedAt, deletedAt: null });
    expect((body.platforms as Array<Record<string, unknown>>).every((t) => UNKNOWN_TARGET_FIELD in t)).toBe(true);
    // The list answers the same object.
    const listed = (await api(`/posts?limit=500`)).body.data as Array<Record<string, unknown>>;
    expect(listed.find((p) => p.id === pozy._id)).toEqual(body);
    expectDocumentedOrder(body, POST_FIELD_ORDER, UNKNOWN_POST_FIELD);
    expectDocumentedOrder(
      listed.find((p) => p.id === pozy._id)!,
      POST_FIELD_ORDER,
      UNKNOWN_POST_FIELD,
    );
  });

  it('GET /accounts/:id answers every field equal to Pozy’s, after an account change Pozy sends no event for', async () => {
    world().updateAccount(instagram, {
      profilePicture: 'https://cdn.example/p.jpg',
      followersCount: 1250,
      metadata: { team: 'growth' },
      enabled: false,
    });
    expect((await api(`/admin/resync/profiles/${profileId}/accounts`, { method: 'POST', headers: ADMIN })).status).toBe(202);
    const pozy = world()
      .listAccounts()
      .find((a) => a._id === instagram)!;
    expect(pozy[UNKNOWN_ACCOUNT_FIELD as keyof Account]).toBe(true);

    const body = await waitFor('the account to be read again', async () => {
      const { body } = await api(`/accounts/${instagram}`);
      return body.followersCount === 1250 ? body : undefined;
    });

    expect(without(body, ACCOUNT_BOOKKEEPING)).toEqual(asMirroredAccount(pozy));
    expectDocumentedOrder(body, ACCOUNT_FIELD_ORDER, UNKNOWN_ACCOUNT_FIELD);
    const listed = (await api('/accounts?limit=500')).body.data as Array<Record<string, unknown>>;
    expectDocumentedOrder(
      listed.find((a) => a.id === instagram)!,
      ACCOUNT_FIELD_ORDER,
      UNKNOWN_ACCOUNT_FIELD,
    );
    expect(((await api('/accounts?enabled=false')).body.data as Array<{ id: string }>).map((a) => a.id)).toEqual([instagram]);
  });

  it('an edit of only mediaItems, or of only a target’s errorCategory, notifies once; a re-read of the same post notifies no one', async () => {
    const pozy = await wholePost();
    const notified = () => subscriber.about(pozy._id);
    await waitFor('the new post’s notifications', async () => (notified().length > 0 ? true : undefined));
    await settled(harness);
    const before = notified().length;

    world().editPost(pozy._id, { mediaItems: [{ type: 'image', url: 'https://media.example/only-this-changed.jpg' }] });
    await resync(pozy._id);
    const media = await waitFor('a notification of the media edit', async () => (notified().length > before ? notified() : undefined));
    await settled(harness);
    expect(media.length).toBe(before + 1);
    const mirrored = (await api(`/posts/${pozy._id}`)).body;
    expect(media[media.length - 1].json.data.post).toEqual({ ...mirrored, syncedAt: expect.any(String) as string });
    expect(mirrored.mediaItems).toEqual([{ type: 'image', url: 'https://media.example/only-this-changed.jpg' }]);

    // Read again, unchanged: the mirror writes (syncedAt), and tells no one.
    await resync(pozy._id);
    await settled(harness);
    expect(notified().length).toBe(before + 1);

    world().editTarget(pozy._id, instagram, { errorCategory: 'account_issue' });
    await resync(pozy._id);
    await waitFor('a notification of the errorCategory edit', async () => (notified().length > before + 1 ? true : undefined));
    await settled(harness);
    expect(notified().length).toBe(before + 2);
    const target = (notified()[before + 1].json.data.post!.platforms as Array<Record<string, unknown>>).find((t) => t.accountId === instagram);
    expect(target?.errorCategory).toBe('account_issue');
  });

  it('a row mirrored before whole objects fills in on its next read, and POST /admin/sweep refills them all', async () => {
    const [a, b] = [await wholePost(), await wholePost()];
    // As the mirror held posts before: no extra, no title, tags or visibility.
    await harness.service.pool.query(
      `UPDATE post SET extra = NULL, title = NULL, tags = '{}', hashtags = '{}', visibility = NULL WHERE id = ANY($1)`,
      [[a._id, b._id]],
    );
    expect((await api(`/posts/${a._id}`)).body).toMatchObject({ title: null, tags: [] });
    expect((await api(`/posts/${a._id}`)).body).not.toHaveProperty('mediaItems');

    await resync(a._id);
    await settled(harness);
    expect(without((await api(`/posts/${a._id}`)).body, POST_BOOKKEEPING)).toEqual(asMirrored(world().getPost(a._id)!));

    const started = await api('/admin/sweep', { method: 'POST', headers: ADMIN });
    expect(started.status).toBe(202);
    await waitFor(
      'the sweep to end',
      async () => {
        const run = (await api(`/admin/sweep/${String(started.body.runId)}`, { headers: ADMIN })).body;
        return run.status === 'running' ? undefined : run;
      },
      60_000,
    );
    expect(without((await api(`/posts/${b._id}`)).body, POST_BOOKKEEPING)).toEqual(asMirrored(world().getPost(b._id)!));
    const { rows } = await harness.service.pool.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM post WHERE extra IS NULL AND deleted_at IS NULL',
    );
    expect(rows[0].n).toBe(0);
  });
});
