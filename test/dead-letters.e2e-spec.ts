import { randomUUID } from 'node:crypto';
import { mirrorDifferences } from '../simulator/mirror-check';
import { HARNESS_ADMIN_TOKEN, settled } from './support/harness';
import { request } from './support/http';
import { deliver, postEvent } from './support/pozy-events';
import { waitFor } from './support/service';
import { SimulatorSpec, startSpec } from './support/spec';

interface Letter {
  id: string;
  resourceKey: string;
  reason: string;
  error: string;
  attempts: number;
  firstFailureAt: string;
  lastFailureAt: string;
  replayedAt: string | null;
}

const auth = { authorization: `Bearer ${HARNESS_ADMIN_TOKEN}` };

describe('the delivery dead-letter queue', () => {
  let harness: SimulatorSpec;

  const call = <T>(method: string, path: string, headers: Record<string, string> = auth) => request<T>(harness, path, { method, headers });
  const letters = async () => (await call<{ data: Letter[] }>('GET', '/admin/dead-letters?queue=delivery')).body.data;

  beforeAll(async () => {
    // Timeouts after 300 ms, no retry within a job, and dead-lettered once failing for over 1 s (60 s in production).
    // The status is read fresh each time (STATUS_CACHE_MS=0): a reading shared from before the letter would not count it.
    harness = await startSpec('dead_letters', {
      env: { POZY_TIMEOUT_MS: '300', POZY_MAX_RETRIES: '0', DEAD_LETTER_AFTER_MS: '1000', STATUS_CACHE_MS: '0' },
      simulator: {},
    });
  });

  afterAll(async () => {
    await harness?.close();
  });

  it('dead-letters a reconcile whose Pozy calls keep timing out, and a replay after Pozy recovers mirrors the truth', async () => {
    const world = harness.sim.world;
    const profile = world.createProfile('Timeouts');
    const account = world.connectAccount(profile._id, 'linkedin', 'slow');
    await settled(harness);
    harness.sim.setFaults({ apiTimeoutRate: 1 });
    const post = world.createPost({ content: 'behind a dead API', accountIds: [account._id], scheduledFor: Date.now() + 60_000 });

    const [letter] = await waitFor(
      'the reconcile to be dead-lettered',
      async () => {
        const found = (await letters()).filter((l) => l.resourceKey === `post:${post._id}`);
        return found.length > 0 ? found : undefined;
      },
      30_000,
    );
    expect(letter.reason).toMatch(/timed out or was unreachable for over 1 s/);
    expect(letter.error).toMatch(/TimeoutError|aborted/);
    expect(letter.attempts).toBeGreaterThanOrEqual(2);
    expect(new Date(letter.lastFailureAt).getTime() - new Date(letter.firstFailureAt).getTime()).toBeGreaterThan(1000);
    // Moved, not retried forever: nothing left in the queue for it.
    await settled(harness);
    // A reading of the figures begun before the letter was written may still answer: the status shows it soon after.
    await waitFor('the status to count the dead letter', async () =>
      (await call<{ deadLetters: { delivery: number } }>('GET', '/sync/status', {})).body.deadLetters.delivery === 1 ? true : undefined,
    );

    harness.sim.setFaults({ apiTimeoutRate: 0 });
    const dry = await call<{ count: number; replayed: boolean }>('POST', '/admin/dead-letters/replay?queue=delivery&dryRun=true');
    expect(dry).toEqual({ status: 202, body: { queue: 'delivery', count: 1, replayed: false } });
    expect((await letters())[0].replayedAt).toBeNull();

    const replay = await call<{ reconcile: string }>('POST', `/admin/dead-letters/${letter.id}/replay`);
    expect(replay).toEqual({ status: 202, body: { replayed: true, reconcile: `post:${post._id}` } });
    await settled(harness);
    expect(await mirrorDifferences(harness.service.pool, world, { postIds: [post._id], profileIds: [profile._id] })).toEqual([]);
    expect((await letters())[0].replayedAt).not.toBeNull();
    // Replaying again is safe: one more read of the same truth.
    expect((await call('POST', `/admin/dead-letters/${letter.id}/replay`)).status).toBe(202);
    await settled(harness);
    expect(await mirrorDifferences(harness.service.pool, world, { postIds: [post._id], profileIds: [] })).toEqual([]);
  });

  it('dead-letters at once what retrying cannot fix (Pozy refuses the id: 400)', async () => {
    const response = await deliver(harness.service.baseUrl, postEvent('not-a-pozy-id'));
    expect(response.status).toBe(200);

    const [letter] = await waitFor('the reconcile to be dead-lettered', async () => {
      const found = (await letters()).filter((l) => l.resourceKey === 'post:not-a-pozy-id');
      return found.length > 0 ? found : undefined;
    });
    expect(letter).toMatchObject({ reason: 'Pozy answered something retrying cannot change', attempts: 1 });
    expect(letter.error).toMatch(/HTTP 400/);
  });

  it.each([
    [401, 'GET', '/admin/dead-letters?queue=delivery', {}],
    [403, 'GET', '/admin/dead-letters?queue=delivery', { authorization: 'Bearer wrong' }],
    [400, 'GET', '/admin/dead-letters?queue=somewhere', auth],
    [400, 'GET', '/admin/dead-letters', auth],
    [400, 'POST', '/admin/dead-letters/42/replay', auth],
    [404, 'POST', `/admin/dead-letters/${randomUUID()}/replay`, auth],
    [401, 'POST', '/admin/dead-letters/replay?queue=delivery', {}],
    [400, 'POST', '/admin/dead-letters/replay?queue=delivery&dryRun=maybe', auth],
  ])('answers %i to %s %s, replaying nothing', async (status, method, path, headers) => {
    const before = await harness.service.pool.query('SELECT id, replay_count FROM dead_letter ORDER BY id');

    const response = await call<{ statusCode: number; error: string }>(method, path, headers);

    expect(response.status).toBe(status);
    expect(response.body.statusCode).toBe(status);
    expect((await harness.service.pool.query('SELECT id, replay_count FROM dead_letter ORDER BY id')).rows).toEqual(before.rows);
  });
});
