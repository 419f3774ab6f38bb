import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OtlpReceiver } from '../simulator/otlp-collector';
import { PozySimulator } from '../simulator/simulator';
import { createTestDatabase, TestDatabase } from './support/database';
import { freePort } from './support/ports';
import { deliver, postEvent } from './support/pozy-events';
import { spawnService } from './support/process';
import { TEST_WEBHOOK_SECRET, waitFor } from './support/service';
import { TestSubscriber } from './support/subscriber';

/**
 * Tracing off costs nothing: the built service, in a process of its own (so that Node's own require.cache is read,
 * not Jest's module registry), takes a delivery through its whole way (the receive, the read of Pozy, the guarded
 * write, the notification) without an OTLP endpoint, and by its exit has loaded no module of the OpenTelemetry SDK
 * or of an exporter (only @opentelemetry/api, whose calls do nothing without an SDK) and sent nothing, though the
 * variables an SDK reading process.env itself would export metrics and logs by point at a listening collector. The
 * same run with an endpoint loads them and exports: the probe and the collector see what they look for.
 */

const ADMIN_TOKEN = 'admin_tracing_off_token';
const LOADED = 'LOADED_MODULES ';
/** Preloaded (`node --require`): at exit, every module the process loaded, as Node's require.cache holds them. */
const PROBE = `process.on('exit', () => require('node:fs').writeSync(2, '\\n${LOADED}' + JSON.stringify(Object.keys(require.cache)) + '\\n'));\n`;

const isSdk = (path: string) => /\/node_modules\/@opentelemetry\/(?!api\/)/.test(path) || path.endsWith('/tracing/otel-sdk.js');

describe('tracing off: the SDK never loaded, no exporter, nothing sent', () => {
  let db: TestDatabase;
  let sim: PozySimulator;
  let collector: OtlpReceiver;
  let subscriber: TestSubscriber;
  let dir: string;

  beforeAll(async () => {
    db = await createTestDatabase('tracing_off');
    sim = await PozySimulator.start({
      apiKey: 'sk_sim_tracing_off',
      seed: 3,
      timeScale: 10_000,
      rateLimitPerMinute: 100_000,
      webhook: { url: 'http://127.0.0.1:9/not-used', secret: TEST_WEBHOOK_SECRET },
    });
    sim.setWebhookUrl(undefined);
    sim.world.seedWorld({ profiles: 1, accountsPerProfile: 1, posts: 0 });
    collector = await OtlpReceiver.start();
    subscriber = await TestSubscriber.start();
    dir = mkdtempSync(join(tmpdir(), 'pozy-tracing-off-'));
    writeFileSync(join(dir, 'probe.js'), PROBE);
  });

  afterAll(async () => {
    await subscriber?.close();
    await collector?.close();
    await sim?.stop();
    await db?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** Runs the built service with `env`, takes one post's delivery to the subscriber, stops it: the modules it loaded. */
  async function oneDelivery(env: Record<string, string>): Promise<string[]> {
    const port = await freePort();
    const baseUrl = `http://127.0.0.1:${port}`;
    const service = spawnService(
      {
        NODE_OPTIONS: `--require ${join(dir, 'probe.js')}`,
        PORT: String(port),
        HOST: '127.0.0.1',
        DATABASE_URL: db.url,
        POZY_API_URL: sim.url,
        POZY_API_KEY: sim.apiKey,
        POZY_WEBHOOK_SECRET: TEST_WEBHOOK_SECRET,
        ADMIN_TOKEN,
        INITIAL_IMPORT: 'off',
        BACKFILL_CRON: 'off',
        RECONCILE_CLOCK_SKEW_MS: '0',
        READ_LAG_GRACE_MS: '0',
        NOTIFY_ALLOWED_HOSTS: '127.0.0.1',
        SPOOL_DIR: mkdtempSync(join(dir, 'spool-')),
        LOG_LEVEL: 'warn',
        LOG_FORMAT: 'json',
        ...env,
      },
      dir,
    );
    try {
      await waitFor(
        'the service to become ready',
        async () => ((await fetch(`${baseUrl}/health/ready`).catch(() => undefined))?.status === 200 ? true : undefined),
        60_000,
        200,
      );
      const headers = { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' };
      const subscriptions = (await (await fetch(`${baseUrl}/admin/subscriptions`, { headers })).json()) as { data: unknown[] };
      if (subscriptions.data.length === 0) {
        const created = await fetch(`${baseUrl}/admin/subscriptions`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ url: subscriber.url, eventTypes: ['post.changed'] }),
        });
        expect(created.status).toBe(201);
      }
      const [account] = sim.world.listAccounts();
      const postId = sim.world.createPost({ content: 'untraced', accountIds: [account._id], scheduledFor: Date.now() + 60_000 })._id;
      expect((await deliver(baseUrl, postEvent(postId, 'post.scheduled'))).status).toBe(200);
      await waitFor('the notification delivered', async () => (subscriber.about(postId).length > 0 ? true : undefined), 30_000);
      service.child.kill('SIGTERM');
      expect(await service.exited).toBe(0);
    } finally {
      if (service.child.exitCode === null) service.child.kill('SIGKILL');
    }
    const line = service
      .output()
      .split('\n')
      .find((l) => l.startsWith(LOADED));
    if (!line) throw new Error(`the probe printed no module list:\n${service.output()}`);
    return JSON.parse(line.slice(LOADED.length)) as string[];
  }

  it('without an endpoint loads only the API, and sends nothing; with one, loads the SDK and exports', async () => {
    const off = await oneDelivery({
      // Every other variable of traces set, and those an SDK reading process.env would export metrics and logs by.
      OTEL_SERVICE_NAME: 'pozy-sync-untraced',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_TRACES_SAMPLER: 'always_on',
      OTEL_BSP_SCHEDULE_DELAY: '10',
      OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: `${collector.url}/v1/metrics`,
      OTEL_EXPORTER_OTLP_LOGS_ENDPOINT: `${collector.url}/v1/logs`,
    });
    expect(off.filter(isSdk)).toEqual([]);
    // The probe saw the service's own modules, and the API its spans are written against.
    expect(off.some((path) => path.endsWith('/dist/reconcile/reconcile.service.js'))).toBe(true);
    expect(off.some((path) => path.includes('/node_modules/@opentelemetry/api/'))).toBe(true);
    expect(collector.requests).toEqual([]);

    const on = await oneDelivery({ OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' });
    expect(on.some((path) => path.endsWith('/dist/tracing/otel-sdk.js'))).toBe(true);
    expect(on.some((path) => path.includes('/node_modules/@opentelemetry/sdk-trace-node/'))).toBe(true);
    expect(on.some((path) => path.includes('/node_modules/@opentelemetry/exporter-trace-otlp-http/'))).toBe(true);
    // Spans exported at the latest by the shutdown's flush.
    expect(collector.spans.some((span) => span.name === 'POST /webhooks/pozy')).toBe(true);
  });
});
