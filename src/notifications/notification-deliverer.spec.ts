import { Tracing } from '../tracing/tracing.service';
import { Logger } from '@nestjs/common';
import type { AppConfig } from '../config/app-config';
import { NotificationDeliverer } from './notification-deliverer.service';
import { SecretKeyError } from '../common/secret-box';
import type { AttemptResult, Endpoint, PermanentReason } from './notification-sender';
import { NotificationSignal } from './notification-signal';
import type { AttemptRecord, DueNotification, Lease } from './notification.repository';
import type { SigningSecrets } from './subscription.repository';

const DEAD_LETTER_AFTER_MS = 60_000;
const RETRY_BASE_MS = 1_000;
const RETRY_MAX_MS = 300_000;
const LEASE: Lease = {
  id: 'sub-1',
  url: 'https://subscriber.example/hooks',
  secret: 'whsec_c2VjcmV0',
  previousSecret: null,
  previousSecretUntil: null,
};

function due(id: string, attempts = 0, failingSince: Date | null = null): DueNotification {
  return {
    id,
    type: 'post.changed',
    resourceKey: `post:${id}`,
    sequence: 1,
    createdAt: new Date(),
    data: {},
    attempts,
    failingSince,
    replay: false,
    workspaceId: 'default',
    traceParent: null,
  };
}

const delivered = (): AttemptResult => ({ ok: true, statusCode: 204, durationMs: 3 });
const failed = (
  statusCode: number | null,
  extra: { unreachable?: boolean; permanent?: boolean; retryAfterMs?: number; permanentReason?: PermanentReason; error?: string } = {},
): AttemptResult => ({
  ok: false,
  statusCode,
  durationMs: 5,
  error: extra.error ?? (statusCode === null ? 'TimeoutError (The operation was aborted due to timeout)' : `HTTP ${statusCode}`),
  unreachable: extra.unreachable ?? false,
  permanent: extra.permanent ?? false,
  permanentReason: extra.permanentReason,
  retryAfterMs: extra.retryAfterMs,
});

/**
 * One delivery round over in-process collaborators: the repository leases one subscription whose due notifications
 * are `notifications`, the sender answers each with `answers[id]`, and the round ends once the attempts are
 * recorded. Resolves what the deliverer decided for each attempt.
 */
async function deliver(
  notifications: DueNotification[],
  answers: Record<string, AttemptResult>,
  signingSecrets: () => SigningSecrets = () => ({ current: LEASE.secret!, previous: null, previousUntil: null }),
): Promise<AttemptRecord[]> {
  let leased = false;
  let taken = false;
  let recorded!: (records: AttemptRecord[]) => void;
  const records = new Promise<AttemptRecord[]>((resolve) => (recorded = resolve));
  const repository = {
    async leaseDue() {
      if (leased) return [];
      leased = true;
      return [LEASE];
    },
    async takeDue() {
      if (taken) return [];
      taken = true;
      return notifications;
    },
    async record(_subscriptionId: string, _owner: string, batch: AttemptRecord[]) {
      recorded(batch);
      return { pausedAt: null, leaseHeld: true };
    },
    async release() {},
  };
  const sender = { send: async (endpoint: Endpoint, notification: DueNotification) => (sent.push(endpoint), answers[notification.id]) };
  const config = {
    runsWorker: true,
    deadLetterAfterMs: DEAD_LETTER_AFTER_MS,
    notify: { concurrency: 4, timeoutMs: 1_000, retryBaseMs: RETRY_BASE_MS, retryMaxMs: RETRY_MAX_MS, pauseAfterMs: 900_000 },
  } as unknown as AppConfig;
  const metrics = { notificationAttempts: { inc() {} }, notificationDuration: { observe() {} } };
  type Args = ConstructorParameters<typeof NotificationDeliverer>;
  const deliverer = new NotificationDeliverer(
    repository as unknown as Args[0],
    sender as unknown as Args[1],
    new NotificationSignal(),
    config,
    metrics as unknown as Args[4],
    { signingSecrets } as unknown as Args[5],
    Tracing.off(),
    { emit: async () => undefined } as unknown as Args[7],
  );
  deliverer.onApplicationBootstrap();
  try {
    return await records;
  } finally {
    await deliverer.beforeApplicationShutdown();
  }
}

/** How long after the attempt the retry is due. */
/** What the sender was asked to send to, attempt by attempt. */
const sent: Endpoint[] = [];

const retryAfter = (record: AttemptRecord) => record.nextAttemptAt!.getTime() - record.attemptedAt.getTime();
/** Time passes between the attempt and the decision; a few ms at most here. */
const SLACK_MS = 50;

describe('NotificationDeliverer: retry and dead-letter timing', () => {
  beforeAll(() => {
    Logger.overrideLogger(false);
  });
  afterEach(() => jest.restoreAllMocks());

  it('records a 2xx as delivered, with nothing more to do', async () => {
    const [record] = await deliver([due('n1', 2)], { n1: delivered() });

    expect(record).toMatchObject({ id: 'n1', outcome: 'delivered', statusCode: 204, nextAttemptAt: null, failingSince: null, reason: null });
  });

  it.each([
    [0, 1_000],
    [1, 2_000],
    [3, 8_000],
    [8, 256_000],
    [9, RETRY_MAX_MS],
    [30, RETRY_MAX_MS],
  ])('retries after %i failed attempts between half and all of min(max, base × 2^attempts) = %i ms', async (attempts, bound) => {
    const random = jest.spyOn(Math, 'random');

    random.mockReturnValue(0);
    const [low] = await deliver([due('n1', attempts)], { n1: failed(500) });
    random.mockReturnValue(0.999_999);
    const [high] = await deliver([due('n1', attempts)], { n1: failed(500) });

    expect(low.outcome).toBe('retry');
    expect(retryAfter(low)).toBeGreaterThanOrEqual(bound / 2);
    expect(retryAfter(low)).toBeLessThan(bound / 2 + SLACK_MS);
    expect(retryAfter(high)).toBeGreaterThanOrEqual(bound - 1);
    expect(retryAfter(high)).toBeLessThan(bound + SLACK_MS);
  });

  it('waits at least what Retry-After asked, when that is longer than the backoff', async () => {
    const [record] = await deliver([due('n1', 0)], { n1: failed(429, { retryAfterMs: 20_000 }) });

    expect(record.outcome).toBe('retry');
    expect(retryAfter(record)).toBeGreaterThanOrEqual(20_000);
    expect(retryAfter(record)).toBeLessThan(20_000 + SLACK_MS);
  });

  it('waits at most a day however long Retry-After asked, so the retry is always a date', async () => {
    jest.spyOn(Math, 'random').mockReturnValue(0.999_999);
    for (const retryAfterMs of [86_400_000, 1e17, Infinity]) {
      const [record] = await deliver([due('n1', 0)], { n1: failed(429, { retryAfterMs }) });

      expect(record.outcome).toBe('retry');
      expect(Number.isFinite(record.nextAttemptAt!.getTime())).toBe(true);
      expect(retryAfter(record)).toBeGreaterThanOrEqual(86_400_000);
      expect(retryAfter(record)).toBeLessThan(86_400_000 + SLACK_MS);
    }
  });

  it('starts the unreachable clock at the first timeout, and keeps its start on the next ones', async () => {
    const [first] = await deliver([due('n1', 0)], { n1: failed(null, { unreachable: true }) });
    expect(first).toMatchObject({ outcome: 'retry', failingSince: first.attemptedAt });

    const since = new Date(Date.now() - 10_000);
    const [later] = await deliver([due('n1', 1, since)], { n1: failed(503, { unreachable: true }) });
    expect(later).toMatchObject({ outcome: 'retry', failingSince: since });
  });

  it('stops the unreachable clock when the endpoint answers, even with an error', async () => {
    const [record] = await deliver([due('n1', 4, new Date(Date.now() - 50_000))], { n1: failed(500) });

    expect(record).toMatchObject({ outcome: 'retry', failingSince: null });
  });

  it('never schedules a retry past the dead-letter deadline: the last one falls just after it', async () => {
    const since = new Date(Date.now() - 30_000);

    const [record] = await deliver([due('n1', 10, since)], { n1: failed(null, { unreachable: true }) });

    expect(record.outcome).toBe('retry');
    expect(record.nextAttemptAt!.getTime()).toBe(since.getTime() + DEAD_LETTER_AFTER_MS + 1);
  });

  it('dead-letters a notification whose endpoint has timed out or been unreachable for over DEAD_LETTER_AFTER_MS', async () => {
    const since = new Date(Date.now() - DEAD_LETTER_AFTER_MS - 1_000);

    const [record] = await deliver([due('n1', 6, since)], { n1: failed(null, { unreachable: true }) });

    expect(record).toMatchObject({
      outcome: 'dead',
      nextAttemptAt: null,
      failingSince: since,
      reason: 'The endpoint timed out or was unreachable for over 60 s',
    });
  });

  it('does not dead-letter an endpoint answering 5xx for long, since it answers: it keeps retrying', async () => {
    const [record] = await deliver([due('n1', 40, null)], { n1: failed(500) });

    expect(record.outcome).toBe('retry');
  });

  it('dead-letters at once an answer no retry can change (a permanent 4xx)', async () => {
    const [record] = await deliver([due('n1', 0)], { n1: failed(410, { permanent: true }) });

    expect(record).toMatchObject({ outcome: 'dead', nextAttemptAt: null, reason: 'The endpoint answered 410, which retrying cannot change' });
  });

  it('dead-letters at once a redirect, with reason redirect', async () => {
    const error = 'HTTP 302 to https://elsewhere.example: redirects are not followed; give the subscription the URL that receives';
    const [record] = await deliver([due('n1', 0)], { n1: failed(302, { permanent: true, permanentReason: 'redirect', error }) });

    expect(record).toMatchObject({ outcome: 'dead', nextAttemptAt: null, reason: 'redirect', error, statusCode: 302 });
  });

  it('dead-letters at once a subscriber at a refused address, with reason forbidden_address, and starts no unreachable clock', async () => {
    const error = 'moving.example.com resolves to 127.0.0.1, and 127.0.0.1 is in 127.0.0.0/8 (loopback): refused before connecting';
    const [record] = await deliver([due('n1', 0)], { n1: failed(null, { permanent: true, permanentReason: 'forbidden_address', error }) });

    expect(record).toMatchObject({ outcome: 'dead', nextAttemptAt: null, failingSince: null, reason: 'forbidden_address', error });
  });

  it('decides for each notification of a batch on its own', async () => {
    const records = await deliver([due('a', 0), due('b', 0), due('c', 0)], {
      a: delivered(),
      b: failed(410, { permanent: true }),
      c: failed(500),
    });

    expect(records.map((r) => [r.id, r.outcome])).toEqual([
      ['a', 'delivered'],
      ['b', 'dead'],
      ['c', 'retry'],
    ]);
  });

  it('signs with both secrets while a rotation overlaps, then with the new one only', async () => {
    sent.length = 0;
    const overlap = (until: Date) => () => ({ current: 'whsec_bmV3', previous: 'whsec_b2xk', previousUntil: until });
    await deliver([due('a')], { a: delivered() }, overlap(new Date(Date.now() + 60_000)));
    await deliver([due('b')], { b: delivered() }, overlap(new Date(Date.now() - 1)));
    expect(sent.map((endpoint) => endpoint.secrets)).toEqual([['whsec_bmV3', 'whsec_b2xk'], ['whsec_bmV3']]);
  });

  it('sends nothing when the secret cannot be decrypted: a failure that says why, retried like any other', async () => {
    sent.length = 0;
    const [record] = await deliver([due('a')], { a: delivered() }, () => {
      throw new SecretKeyError('the subscription sub-1 secret is encrypted with key "k0", which SECRETS_ENCRYPTION_KEY does not hold');
    });
    expect(sent).toEqual([]);
    expect(record).toMatchObject({ outcome: 'retry', statusCode: null, failingSince: null, error: expect.stringMatching(/^Not sent: .*key "k0"/) });
  });
});
