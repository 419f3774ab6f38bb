import { randomUUID } from 'node:crypto';
import { parseMetrics } from './support/metrics';
import { settled } from './support/harness';
import { waitFor } from './support/service';
import { deliver, postEvent } from './support/pozy-events';
import { SimulatorSpec, startSpec } from './support/spec';

describe('GET /metrics', () => {
  let harness: SimulatorSpec;
  const scrape = async () => {
    const response = await fetch(`${harness.service.baseUrl}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    return parseMetrics(await response.text());
  };

  beforeAll(async () => {
    // No deliveries from the simulator: the test sends exactly the events it counts. Each scrape reads the figures
    // anew: a pending read lasts until the dispatcher takes it, a few milliseconds, shorter than STATUS_CACHE_MS.
    harness = await startSpec('metrics', { env: { STATUS_CACHE_MS: '0' }, simulator: { deliver: false } });
  });

  afterAll(async () => {
    await harness?.close();
  });

  it('counts a known sequence of deliveries, reads and savings exactly', async () => {
    const profile = harness.sim.world.createProfile('Metrics');
    const account = harness.sim.world.connectAccount(profile._id, 'linkedin', 'metrics');
    const post = harness.sim.world.createPost({ content: 'counted', accountIds: [account._id], scheduledFor: Date.now() + 60_000 });
    const base = harness.service.baseUrl;

    // Three events for one post at once, one delivered twice, one test event, and three rejected deliveries.
    const events = [postEvent(post._id, 'post.scheduled'), postEvent(post._id, 'post.platform.published'), postEvent(post._id, 'post.scheduled')];
    const answers = await Promise.all(events.map((event) => deliver(base, event)));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
    expect((await deliver(base, events[0])).body).toMatchObject({ duplicate: true });
    const test = { id: randomUUID(), event: 'webhook.test', message: 'Test webhook', test: true, timestamp: new Date().toISOString() };
    expect((await deliver(base, test)).body).toMatchObject({ test: true });
    expect((await deliver(base, postEvent(post._id), { secret: 'not-the-secret' })).status).toBe(401);
    expect((await deliver(base, postEvent(post._id), { body: '{"id": ' })).status).toBe(400);
    expect((await deliver(base, postEvent(post._id), { headers: { 'content-type': 'text/plain' } })).status).toBe(415);
    await settled(harness);

    // The gauges come from a reading of the figures that one begun while the read was still owed may answer: the
    // scrape that counts is one after a reading saw the read done.
    const m = await waitFor('a scrape with the read done', async () => {
      const scraped = await scrape();
      return scraped.get('pozy_sync_reconcile_pending') === 0 && scraped.get('pozy_sync_mirror_lag_seconds') === 0 ? scraped : undefined;
    });
    const received = (outcome: string, reason = '') => m.get(`pozy_sync_webhooks_received_total{outcome="${outcome}",reason="${reason}"}`) ?? 0;
    expect(received('accepted')).toBe(3);
    expect(received('duplicate')).toBe(1);
    expect(received('test')).toBe(1);
    expect(received('rejected', 'invalid_signature')).toBe(1);
    expect(received('rejected', 'malformed_json')).toBe(1);
    expect(received('rejected', 'unsupported_media_type')).toBe(1);
    expect(m.get('pozy_sync_webhook_receive_duration_seconds_count{status="200"}')).toBe(5);

    // Every accepted event either cost a read of its own or was saved: by joining a pending read, or by a skip.
    const reads = m.get('pozy_sync_pozy_api_requests_total{route="GET /v1/posts/:id",status="200"}') ?? 0;
    const coalesced = m.get('pozy_sync_pozy_api_calls_saved_total{reason="coalesced"}') ?? 0;
    const skipped = m.get('pozy_sync_pozy_api_calls_saved_total{reason="skipped"}') ?? 0;
    expect(reads).toBeGreaterThanOrEqual(1);
    expect(reads + coalesced + skipped).toBe(3);
    const jobs = (outcome: string) => m.get(`pozy_sync_reconcile_jobs_total{resource="post",outcome="${outcome}"}`) ?? 0;
    expect(jobs('written')).toBe(1); // the one read that found the post new
    expect(jobs('written') + jobs('stale') + jobs('skipped')).toBe(reads + skipped);
    expect(jobs('failed')).toBe(0);

    // Gauges read from the database and the spool: nothing pending, nothing dead.
    expect(m.get('pozy_sync_mirror_lag_seconds')).toBe(0);
    expect(m.get('pozy_sync_reconcile_pending')).toBe(0);
    expect(m.get('pozy_sync_dead_letters{queue="delivery",kind="reconcile"}')).toBe(0);
    expect(m.get('pozy_sync_dead_letters{queue="ack",kind="event"}')).toBe(0);
    expect(m.get('pozy_sync_spool_events')).toBe(0);
    expect(m.get('pozy_sync_notifications_pending')).toBe(0);
    // Node's own process metrics.
    expect(m.get('pozy_sync_process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect(m.has('pozy_sync_nodejs_eventloop_lag_seconds')).toBe(true);
  });

  it('shows the mirror lag while a read is owed, waiting or failing in retries', async () => {
    harness.sim.setFaults({ apiTimeoutRate: 1 });
    try {
      const profile = harness.sim.world.createProfile('Lag');
      const account = harness.sim.world.connectAccount(profile._id, 'threads', 'lag');
      const post = harness.sim.world.createPost({ content: 'lagging', accountIds: [account._id], scheduledFor: Date.now() + 60_000 });
      expect((await deliver(harness.service.baseUrl, postEvent(post._id))).status).toBe(200);
      // The read keeps timing out. Once it has failed in the worker, it is no longer waiting to be dispatched, yet
      // still owed: the lag counts it.
      const failedJobs = () => scrape().then((m) => m.get('pozy_sync_reconcile_jobs_total{resource="post",outcome="failed"}') ?? 0);
      for (const deadline = Date.now() + 45_000; (await failedJobs()) === 0;) {
        if (Date.now() > deadline) throw new Error('the read never failed');
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const m = await scrape();
      expect(m.get('pozy_sync_mirror_lag_seconds')).toBeGreaterThan(0);
    } finally {
      harness.sim.setFaults({ apiTimeoutRate: 0 });
    }
  }, 90_000);
});
