import { once } from 'node:events';
import { createServer, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Logger } from '@nestjs/common';
import { MAX_ERROR_TEXT_BYTES } from '../src/common/bounded-text';
import { createTestDatabase, TestDatabase } from './support/database';
import { Harness, HARNESS_ADMIN_TOKEN, settled, startHarness } from './support/harness';
import { deliver, postEvent } from './support/pozy-events';
import { queuedJobs, reconcileRequests } from './support/queue';
import { RunningService, startService, waitFor } from './support/service';

const ADMIN = { authorization: `Bearer ${HARNESS_ADMIN_TOKEN}` };
/** POZY_MAX_PAUSE_MS's default: the tests run with it. */
const CAP_MS = 120_000;
/** A pause is set by the database's clock a moment before a test reads it: its end may be that much past now + cap. */
const SLACK_MS = 5_000;

interface Budget {
  pausedUntil: string | null;
  limit: number;
}

async function call(service: RunningService, method: string, path: string, headers: Record<string, string> = {}) {
  const response = await fetch(`${service.baseUrl}${path}`, { method, headers });
  const text = await response.text();
  return { status: response.status, text, json: () => JSON.parse(text) as Record<string, unknown> };
}

async function budgetOf(service: RunningService): Promise<Budget> {
  const status = await call(service, 'GET', '/sync/status');
  expect(status.status).toBe(200);
  return (status.json() as { pozyBudget: Budget }).pozyBudget;
}

const bytes = (text: string) => Buffer.byteLength(text);
const unixSeconds = (ms: number) => String(Math.floor(ms / 1000));

describe("Pozy's Retry-After and X-RateLimit-Reset, whatever they say", () => {
  let db: TestDatabase;
  let harness: Harness;
  /** The second replica, and the only one running jobs: every read of Pozy is its own. */
  let worker: RunningService;
  let accountId: string;

  beforeAll(async () => {
    db = await createTestDatabase('pozy_pauses');
    // The budget as each replica shows it right now: the status figures' one-second reuse is not what this tests.
    harness = await startHarness(db.url, { env: { ROLE: 'api', STATUS_CACHE_MS: '0' } });
    const { sim } = harness;
    worker = await startService(db.url, {
      POZY_API_URL: sim.url,
      POZY_API_KEY: sim.apiKey,
      POZY_TIMEOUT_MS: '1000',
      POZY_RATE_LIMIT_PER_MINUTE: '100000',
      RECONCILE_COALESCE_WINDOW_MS: '0',
      RECONCILE_CLOCK_SKEW_MS: '0',
      READ_LAG_GRACE_MS: '0',
      POZY_MAX_RETRIES: '2',
      ADMIN_TOKEN: HARNESS_ADMIN_TOKEN,
      STATUS_CACHE_MS: '0',
    });
    const profile = sim.world.createProfile('Pauses');
    accountId = sim.world.connectAccount(profile._id, 'linkedin', 'pauses')._id;
    await settled(harness);
  }, 60_000);

  afterAll(async () => {
    jest.restoreAllMocks();
    await worker?.close();
    await harness?.close();
    await db?.drop();
  });

  /** A post whose event asks the worker for a read, answered 429 while the faults say so. */
  const newPost = () => harness.sim.world.createPost({ content: 'behind a 429', accountIds: [accountId], scheduledFor: Date.now() + 3_600_000 });

  /** The read of `postId` ended postponed, its job done: not failed, not retrying. */
  const postponedNotFailed = (postId: string) =>
    waitFor(
      `the read of post ${postId} postponed, its job done`,
      async () => {
        const key = `post:${postId}`;
        const request = (await reconcileRequests(worker.pool)).find((r) => r.key === key);
        const jobs = (await queuedJobs(worker.pool)).filter((j) => j.key === key);
        return request && request.due_at.getTime() > Date.now() + 10_000 && jobs.length === 0 ? request : undefined;
      },
      30_000,
    );

  /** The operator lifts the pause, and reads the post again: the worker replica reads it at once. */
  async function resumeAndRead(postId: string): Promise<void> {
    harness.sim.setFaults({ api429Rate: 0, api429RetryAfter: '1', api429RateLimitReset: '' });
    const resumed = await call(harness.service, 'DELETE', '/admin/pozy-budget/pause', ADMIN);
    expect(resumed.status).toBe(200);
    expect((resumed.json().pozyBudget as Budget).pausedUntil).toBeNull();
    expect((await budgetOf(worker)).pausedUntil).toBeNull();
    expect((await call(harness.service, 'POST', `/admin/resync/posts/${postId}`, ADMIN)).status).toBe(202);
    // Well inside what the pause had left (over a minute): only its lifting lets the read through this soon.
    await waitFor(
      `post ${postId} in the mirror`,
      async () => ((await call(worker, 'GET', `/posts/${postId}`)).status === 200 ? true : undefined),
      45_000,
    );
  }

  it('cuts Retry-After: 86400 to POZY_MAX_PAUSE_MS, says so once, shows it, and the operator lifts it for the other replica', async () => {
    const warn = jest.spyOn(Logger.prototype, 'warn');
    harness.sim.setFaults({ api429Rate: 1, api429RetryAfter: '86400' });
    const post = newPost();

    const pausedUntil = await waitFor('the pause', async () => (await budgetOf(harness.service)).pausedUntil ?? undefined, 30_000);
    const left = Date.parse(pausedUntil) - Date.now();
    expect(left).toBeGreaterThan(CAP_MS - 30_000);
    expect(left).toBeLessThanOrEqual(CAP_MS + SLACK_MS);
    // One budget: the worker's status shows the same pause.
    expect((await budgetOf(worker)).pausedUntil).toBe(pausedUntil);
    const request = await postponedNotFailed(post._id);
    expect(request.due_at.getTime() - Date.now()).toBeLessThanOrEqual(CAP_MS + SLACK_MS);

    const page = await call(harness.service, 'GET', '/');
    expect(page.status).toBe(200);
    expect(page.text).toContain(`<dt>Paused</dt><dd class="error-text">until <time datetime="${pausedUntil}">`);
    const said = warn.mock.calls.map((args) => String(args[0])).filter((line) => line.includes('86400'));
    expect(said).toEqual([
      'Pozy answered 429 (Retry-After "86400"; 86400 s is longer than POZY_MAX_PAUSE_MS (120000 ms)): every replica pauses its requests for 120 s',
    ]);
    warn.mockRestore();

    // Only the admin token lifts it.
    const anonymous = await call(harness.service, 'DELETE', '/admin/pozy-budget/pause');
    expect([anonymous.status, anonymous.json()]).toEqual([401, expect.objectContaining({ statusCode: 401, error: 'missing_token' })]);
    const wrong = await call(harness.service, 'DELETE', '/admin/pozy-budget/pause', { authorization: 'Bearer not-the-token' });
    expect([wrong.status, wrong.json()]).toEqual([403, expect.objectContaining({ statusCode: 403, error: 'invalid_token' })]);
    expect((await budgetOf(worker)).pausedUntil).toBe(pausedUntil);

    harness.sim.setFaults({ api429Rate: 0 });
    const resumed = await call(harness.service, 'DELETE', '/admin/pozy-budget/pause', ADMIN);
    expect([resumed.status, resumed.json()]).toEqual([
      200,
      { liftedPauseUntil: pausedUntil, pozyBudget: expect.objectContaining({ pausedUntil: null, limit: 100_000, waiting: expect.any(Array) }) },
    ]);
    // Lifting a budget that is not paused is the same answer, with nothing lifted.
    expect((await call(harness.service, 'DELETE', '/admin/pozy-budget/pause', ADMIN)).json()).toMatchObject({ liftedPauseUntil: null });
    await resumeAndRead(post._id);
  }, 120_000);

  it.each([
    // Unreadable: passed over for the X-RateLimit-Reset, here 90 s ahead.
    ['1e300', 90_000],
    // Readable, and far too long: cut to the cap.
    ['Fri, 31 Dec 9999 23:59:59 GMT', undefined],
    ['99999999999999999999', undefined],
  ])(
    'takes Retry-After %p for a pause within the cap: the status endpoints answer 200 and show it, and the job is not failed',
    async (retryAfter, resetInMs) => {
      const reset = resetInMs === undefined ? '' : unixSeconds(Date.now() + resetInMs);
      harness.sim.setFaults({ api429Rate: 1, api429RetryAfter: retryAfter, api429RateLimitReset: reset });
      const post = newPost();

      const pausedUntil = await waitFor('the pause', async () => (await budgetOf(harness.service)).pausedUntil ?? undefined, 30_000);
      const left = Date.parse(pausedUntil) - Date.now();
      expect(left).toBeGreaterThan(0);
      expect(left).toBeLessThanOrEqual((resetInMs ?? CAP_MS) + SLACK_MS);
      const page = await call(harness.service, 'GET', '/');
      expect(page.status).toBe(200);
      expect(page.text).toContain(`<time datetime="${pausedUntil}">`);
      expect((await call(worker, 'GET', '/metrics')).status).toBe(200);
      await postponedNotFailed(post._id);

      await resumeAndRead(post._id);
    },
    120_000,
  );

  it('passes over an X-RateLimit-Reset it cannot read: short pauses, and the job is never failed for it', async () => {
    const route = 'GET /v1/posts/:postId';
    const limited = () => harness.sim.stats().api.byRoute[route]?.['429'] ?? 0;
    const before = limited();
    harness.sim.setFaults({ api429Rate: 1, api429RetryAfter: '', api429RateLimitReset: '1e300' });
    const post = newPost();

    // The client's own backoff between tries, the job postponed by as much, and read again: several 429s in a while.
    await waitFor('several 429s for the post', async () => (limited() - before >= 4 ? true : undefined), 60_000);
    // graphile-worker keeps a failed job, with its error, for its next try.
    const { rows: failed } = await worker.pool.query(
      'SELECT attempts, last_error FROM graphile_worker._private_jobs WHERE key = $1 AND last_error IS NOT NULL',
      [`post:${post._id}`],
    );
    expect(failed).toEqual([]);
    expect((await call(harness.service, 'GET', '/sync/status')).status).toBe(200);
    expect((await call(harness.service, 'GET', '/')).status).toBe(200);

    await resumeAndRead(post._id);
  }, 120_000);
});

/** One answer of the fake Pozy: its status, and a JSON body of `totalBytes`, generated as it is sent. */
interface HugeAnswer {
  status: number;
  head: string;
  tail: string;
  totalBytes: number;
}

/** What the fake Pozy managed to send of an answer before the socket closed. */
interface Sent {
  bytes: number;
  /** The whole answer went out. */
  whole: boolean;
  closed: Promise<void>;
}

/** A Pozy that answers huge bodies, streamed with backpressure, counting what the client let it send. */
class HugePozy {
  private constructor(
    private readonly server: Server,
    readonly url: string,
    /** By path. */
    readonly sent: Map<string, Sent>,
  ) {}

  static async start(answers: (path: string) => HugeAnswer | undefined): Promise<HugePozy> {
    const sent = new Map<string, Sent>();
    const server = createServer((req, res) => {
      const path = req.url ?? '';
      const answer = answers(path);
      if (!answer) {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"Not found"}');
        return;
      }
      const record: Sent = { bytes: 0, whole: false, closed: new Promise((resolve) => res.once('close', () => resolve())) };
      sent.set(path, record);
      void stream(res, answer, record);
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    return new HugePozy(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`, sent);
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** Writes `answer` as fast as the client reads it, until it is all sent or the socket closes. */
async function stream(res: ServerResponse, answer: HugeAnswer, record: Sent): Promise<void> {
  let open = true;
  void record.closed.then(() => (open = false));
  res.writeHead(answer.status, { 'content-type': 'application/json' });
  const filler = Buffer.alloc(64 * 1024, 'a');
  const write = (chunk: Buffer) => res.write(chunk, (error) => (error ? undefined : (record.bytes += chunk.length)));
  write(Buffer.from(answer.head));
  let left = answer.totalBytes - answer.head.length - answer.tail.length;
  while (open && left > 0) {
    const chunk = left >= filler.length ? filler : filler.subarray(0, left);
    left -= chunk.length;
    if (!write(chunk)) await Promise.race([new Promise((resolve) => res.once('drain', resolve)), record.closed]);
  }
  if (open) res.end(answer.tail, () => (record.whole = true));
}

describe("Pozy's answers past POZY_MAX_RESPONSE_BYTES, and bodies quoted in errors", () => {
  const MIB = 1024 * 1024;
  const LIMIT = MIB;
  const HUGE_POST = '0123456789abcdef01234567';
  const REFUSED_POST = '0123456789abcdef0123beef';
  let db: TestDatabase;
  let pozy: HugePozy;
  let service: RunningService;
  let logged: string[];

  beforeAll(async () => {
    db = await createTestDatabase('pozy_huge_answers');
    const at = new Date().toISOString();
    pozy = await HugePozy.start((path) => {
      if (path === `/v1/posts/${HUGE_POST}`) {
        // A well-formed post whose content is 100 MB.
        const head = `{"post":{"_id":"${HUGE_POST}","status":"draft","platforms":[],"createdAt":"${at}","updatedAt":"${at}","content":"`;
        return { status: 200, head, tail: '"}}', totalBytes: 100 * MIB };
      }
      if (path === `/v1/posts/${REFUSED_POST}`) return { status: 400, head: '{"error":"', tail: '"}', totalBytes: 20 * MIB };
      if (path.startsWith('/v1/accounts')) return { status: 422, head: '{"error":"', tail: '"}', totalBytes: 20 * MIB };
      return undefined;
    });
    service = await startService(db.url, {
      POZY_API_URL: pozy.url,
      POZY_MAX_RESPONSE_BYTES: String(LIMIT),
      ADMIN_TOKEN: HARNESS_ADMIN_TOKEN,
      RECONCILE_CLOCK_SKEW_MS: '0',
    });
  }, 60_000);

  beforeEach(() => {
    logged = [];
    // Every line the service logs meanwhile: kept for the test, out of its output.
    for (const level of ['warn', 'error'] as const) {
      jest
        .spyOn(Logger.prototype, level)
        .mockImplementation((...[message]: unknown[]) => void logged.push(typeof message === 'string' ? message : JSON.stringify(message)));
    }
  });

  afterEach(() => jest.restoreAllMocks());

  afterAll(async () => {
    await service?.close();
    await pozy?.close();
    await db?.drop();
  });

  const letterOf = (postId: string) =>
    waitFor(
      `the dead letter of post ${postId}`,
      async () => {
        const listed = await call(service, 'GET', '/admin/dead-letters?queue=delivery', ADMIN);
        const letters = (listed.json() as { data: Array<{ resourceKey: string; reason: string; error: string }> }).data;
        return letters.find((l) => l.resourceKey === `post:${postId}`);
      },
      60_000,
    );

  it('stops reading a 100 MB answer at the limit, closing the connection, and dead-letters the read with a short error', async () => {
    expect((await deliver(service.baseUrl, postEvent(HUGE_POST))).status).toBe(200);

    const letter = await letterOf(HUGE_POST);
    const sent = pozy.sent.get(`/v1/posts/${HUGE_POST}`)!;
    await sent.closed;

    expect(letter.reason).toBe('Pozy answered something retrying cannot change');
    expect(letter.error).toBe(
      `GET /v1/posts/:id: Pozy's answer (HTTP 200) is larger than POZY_MAX_RESPONSE_BYTES (${LIMIT} bytes): it was cut off there, unread`,
    );
    // What sockets and their buffers hold beside the limit, far from the 100 MB Pozy would have sent.
    expect(sent.whole).toBe(false);
    expect(sent.bytes).toBeLessThan(32 * MIB);
    // One read: an answer too large stays too large.
    expect(pozy.sent.size).toBe(1);
    expect((await call(service, 'GET', `/posts/${HUGE_POST}`)).status).toBe(404);
  }, 120_000);

  it('keeps only the beginning of a 20 MB refusal, in the dead letter and the log, and reads no further', async () => {
    expect((await deliver(service.baseUrl, postEvent(REFUSED_POST))).status).toBe(200);

    const letter = await letterOf(REFUSED_POST);
    const sent = pozy.sent.get(`/v1/posts/${REFUSED_POST}`)!;
    await sent.closed;

    expect(letter.error).toMatch(/^GET \/v1\/posts\/:id: unexpected HTTP 400 \{"error":"a+ … \[cut after 1024 bytes\]$/);
    expect(bytes(letter.error)).toBeLessThanOrEqual(MAX_ERROR_TEXT_BYTES);
    expect(sent.whole).toBe(false);
    expect(sent.bytes).toBeLessThan(16 * MIB);
    // The failure is logged once the job has ended, which may come after its dead letter is seen.
    await waitFor('the refusal logged', async () => (logged.some((line) => line.includes(REFUSED_POST)) ? true : undefined), 60_000);
    expect(logged.filter((line) => bytes(line) > 2 * MAX_ERROR_TEXT_BYTES)).toEqual([]);
  }, 120_000);

  it("keeps only the beginning of a refusal in a failed sweep's error", async () => {
    const started = await call(service, 'POST', '/admin/sweep', ADMIN);
    expect(started.status).toBe(202);
    const runId = started.json().runId as string;

    const run = await waitFor(
      'the sweep to fail',
      async () => {
        const got = (await call(service, 'GET', `/admin/sweep/${runId}`, ADMIN)).json() as { status: string; error: string | null };
        return got.status === 'failed' ? got : undefined;
      },
      60_000,
    );

    expect(run.error).toMatch(/^GET \/v1\/accounts: unexpected HTTP 422 \{"error":"a+ … \[cut after 1024 bytes\]$/);
    expect(bytes(run.error!)).toBeLessThanOrEqual(MAX_ERROR_TEXT_BYTES);
    expect(logged.filter((line) => bytes(line) > 2 * MAX_ERROR_TEXT_BYTES)).toEqual([]);
    const { rows } = await service.pool.query<{ n: number }>('SELECT max(octet_length(error)) AS n FROM sweep_run');
    expect(rows[0].n).toBeLessThanOrEqual(MAX_ERROR_TEXT_BYTES);
  }, 120_000);
});
