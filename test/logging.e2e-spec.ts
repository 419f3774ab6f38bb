import { tmpdir } from 'node:os';
import { createTestDatabase, TestDatabase } from './support/database';
import { freePort } from './support/ports';
import { deliver, postEvent } from './support/pozy-events';
import { ServiceProcess, spawnService } from './support/process';
import { TEST_WEBHOOK_SECRET, waitFor } from './support/service';

const ADMIN_TOKEN = 'admin-token-that-must-never-be-logged';

interface LogLine {
  level: number;
  msg: string;
  context?: string;
  requestId?: string;
  jobId?: string;
  req?: { id: string; method: string; url: string; eventId?: string };
  res?: { statusCode: number };
}

describe('structured logs of the built service', () => {
  let db: TestDatabase;
  let service: ServiceProcess;
  let baseUrl: string;
  /** Every JSON line the process printed so far (pino writes one object per line). */
  const lines = (): LogLine[] =>
    service
      .output()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as LogLine);

  beforeAll(async () => {
    db = await createTestDatabase('logging');
    const port = await freePort();
    baseUrl = `http://127.0.0.1:${port}`;
    service = spawnService(
      {
        PORT: String(port),
        HOST: '127.0.0.1',
        DATABASE_URL: db.url,
        // Nothing answers here: the reconcile job fails and logs, inside the job's context.
        POZY_API_URL: 'http://127.0.0.1:9',
        POZY_API_KEY: 'sk_live_key_that_must_never_be_logged',
        POZY_MAX_RETRIES: '0',
        POZY_WEBHOOK_SECRET: TEST_WEBHOOK_SECRET,
        ADMIN_TOKEN,
        LOG_FORMAT: 'json',
        BACKFILL_CRON: 'off',
        INITIAL_IMPORT: 'off',
        SHUTDOWN_DRAIN_MS: '0',
      },
      tmpdir(),
    );
    await waitFor(
      'the service to become ready',
      async () => ((await fetch(`${baseUrl}/health/ready`).catch(() => undefined))?.ok ? true : undefined),
      30_000,
      100,
    );
  });

  afterAll(async () => {
    service.child.kill('SIGTERM');
    await service.exited;
    await db.drop();
  });

  it('logs one JSON line per request with the caller’s X-Request-Id, answers it back, and never logs secrets', async () => {
    const event = postEvent('post-logged');
    const response = await deliver(baseUrl, event, { headers: { 'x-request-id': 'corr-4711' } });
    expect(response.status).toBe(200);
    const admin = await fetch(`${baseUrl}/admin/subscriptions`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'x-request-id': 'corr-4712' } });
    expect(admin.headers.get('x-request-id')).toBe('corr-4712');
    const refused = await deliver(baseUrl, postEvent('post-refused'), { secret: 'wrong-secret', headers: { 'x-request-id': 'corr-4713' } });
    expect(refused.status).toBe(401);

    const line = await waitFor('the webhook request line', async () => lines().find((l) => l.req?.id === 'corr-4711' && l.res));
    expect(line).toMatchObject({
      msg: 'request completed',
      req: { method: 'POST', url: '/webhooks/pozy', eventId: event.id },
      res: { statusCode: 200 },
    });
    expect(line.level).toBe(30);
    const rejected = await waitFor('the refused request line', async () => lines().find((l) => l.req?.id === 'corr-4713' && l.res));
    expect(rejected).toMatchObject({ res: { statusCode: 401 } });
    expect(rejected.level).toBe(40);

    // Nothing secret anywhere in the output: not the admin token, the webhook secret, the API key, nor a signature.
    const output = service.output();
    for (const secret of [ADMIN_TOKEN, TEST_WEBHOOK_SECRET, 'sk_live_key_that_must_never_be_logged']) expect(output).not.toContain(secret);
    expect(output).not.toMatch(/x-pozy-signature|authorization/i);
  });

  it('redacts query values named like secrets, and any configured secret in the URL, from request lines', async () => {
    const leaky = 'leaky-value-31337';
    const sent = [
      `/posts?token=${leaky}&limit=1`,
      `/posts?api_key=${leaky}`,
      `/posts?q=${ADMIN_TOKEN}`,
      `/admin/subscriptions?access_token=${ADMIN_TOKEN}`,
      '/posts/sk_live_key_that_must_never_be_logged',
    ];
    const statuses = [];
    for (const [i, path] of sent.entries()) {
      statuses.push((await fetch(`${baseUrl}${path}`, { headers: { 'x-request-id': `redact-${i}` } })).status);
    }
    // Refused, most of them (a token in the query is not a token): their lines are written all the same.
    expect(statuses).toEqual([400, 400, 200, 401, 404]);

    const logged = await waitFor('the five request lines', async () => {
      const found = sent.map((_, i) => lines().find((l) => l.req?.id === `redact-${i}` && l.res));
      return found.every(Boolean) ? found.map((l) => l!.req!.url) : undefined;
    });
    expect(logged).toEqual([
      '/posts?token=[redacted]&limit=1',
      '/posts?api_key=[redacted]',
      '/posts?q=[redacted]',
      '/admin/subscriptions?access_token=[redacted]',
      '/posts/[redacted]',
    ]);
    const output = service.output();
    for (const secret of [leaky, ADMIN_TOKEN, 'sk_live_key_that_must_never_be_logged']) expect(output).not.toContain(secret);
  });

  it('generates a correlation id when none is given, and returns it', async () => {
    const response = await fetch(`${baseUrl}/posts`);
    const id = response.headers.get('x-request-id');
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    await waitFor('the request line', async () => lines().find((l) => l.req?.id === id && l.res));
    // An id that does not look like one (here, with spaces) is replaced, not logged.
    const odd = await fetch(`${baseUrl}/posts`, { headers: { 'x-request-id': 'not an id <script>' } });
    expect(odd.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('puts the job id on the lines a job logs', async () => {
    // The event's reconcile job reads Pozy, which is unreachable here: the failure is logged inside the job.
    expect((await deliver(baseUrl, postEvent('post-job-logged'))).status).toBe(200);
    const failed = await waitFor('a line logged by the job', async () => lines().find((l) => l.jobId !== undefined), 20_000);
    expect(failed.jobId).toEqual(expect.any(String));
    expect(failed.msg).toMatch(/reconcile|Pozy|v1\/posts/i);
  });
});
