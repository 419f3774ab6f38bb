import { randomBytes } from 'node:crypto';
import { AddressInfo, createServer, Socket } from 'node:net';
import { Writable } from 'node:stream';
import { BackfillService } from '../src/backfill/backfill.service';
import { RetentionService } from '../src/retention/retention.service';
import { SweepService } from '../src/runs/import-and-sweep.service';
import { Tracing } from '../src/tracing/tracing.service';
import { createTestDatabase, TestDatabase } from './support/database';
import { Harness, HARNESS_ADMIN_TOKEN, startHarness } from './support/harness';
import { OtlpReceiver, ReceivedSpan, SPAN_KIND } from '../simulator/otlp-collector';
import { deliver, postEvent } from './support/pozy-events';
import { RunningService, startService, waitFor } from './support/service';
import { TestSubscriber } from './support/subscriber';

/**
 * Traces end to end: replica A (ROLE=api) receives Pozy's deliveries, replica B (ROLE=worker) reads Pozy, writes the
 * mirror and notifies a subscriber, and both export their spans over OTLP/HTTP (JSON) to a collector on loopback.
 * What is asserted is what a team reads in its tracing tool: one connected trace per delivery across the replicas (the
 * guarded write, its feed entry, the notification), the links of a coalesced read, the traceparent the subscriber
 * got, and trace ids in B's log lines.
 */

const POST_ROUTE = 'GET /v1/posts/:id';
/** The same route as the simulator counts it. */
const SIM_POST_ROUTE = 'GET /v1/posts/:postId';
/** Wide, so that a burst delivered at once always lands inside one pending read, however slow the machine. */
const COALESCE_WINDOW_MS = 3_000;

describe('traces: one delivery followed across the replicas, to the subscriber', () => {
  let db: TestDatabase;
  let harness: Harness;
  let worker: RunningService;
  let subscriber: TestSubscriber;
  const collector = { receiver: undefined as unknown as OtlpReceiver };
  const workerLog: Record<string, unknown>[] = [];

  const api = () => harness.service;
  const world = () => harness.sim.world;

  async function flushed(): Promise<void> {
    await Promise.all([api().app.get(Tracing).flush(), worker.app.get(Tracing).flush()]);
  }

  /** Waits until the collector holds a span that `match` accepts. */
  async function span(what: string, match: (span: ReceivedSpan) => boolean): Promise<ReceivedSpan> {
    return waitFor(
      what,
      async () => {
        await flushed();
        return collector.receiver.spans.find(match);
      },
      30_000,
      100,
    );
  }

  const receiveSpanOf = (eventId: string, outcome = 'accepted') =>
    span(
      `the receive span of ${eventId}`,
      (s) => s.name === 'POST /webhooks/pozy' && s.attributes['pozy.event.id'] === eventId && s.attributes['pozy_sync.receive.outcome'] === outcome,
    );

  function newPost(content: string): string {
    const [account] = world().listAccounts();
    return world().createPost({ content, accountIds: [account._id], scheduledFor: Date.now() + 60_000 })._id;
  }

  beforeAll(async () => {
    db = await createTestDatabase('traces');
    collector.receiver = await OtlpReceiver.start();
    const tracing = {
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '100',
      RECONCILE_COALESCE_WINDOW_MS: String(COALESCE_WINDOW_MS),
    };
    // The test delivers every event itself: duplicates, a traceparent and a burst are its own.
    harness = await startHarness(db.url, { deliver: false, env: { ...tracing, ROLE: 'api', OTEL_SERVICE_NAME: 'pozy-sync-api' } });
    world().seedWorld({ profiles: 1, accountsPerProfile: 1, posts: 0 });
    const lines = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString('utf8').split('\n')) if (line.trim()) workerLog.push(JSON.parse(line) as Record<string, unknown>);
        done();
      },
    });
    worker = await startService(
      db.url,
      {
        ...tracing,
        ROLE: 'worker',
        POZY_API_URL: harness.sim.url,
        POZY_API_KEY: harness.sim.apiKey,
        POZY_TIMEOUT_MS: '1000',
        POZY_RATE_LIMIT_PER_MINUTE: '100000',
        POZY_MAX_RETRIES: '8',
        RECONCILE_CLOCK_SKEW_MS: '0',
        READ_LAG_GRACE_MS: '0',
        // Its reconcile lines (debug) are the ones that must carry the trace.
        LOG_LEVEL: 'debug',
        LOG_FORMAT: 'json',
      },
      0,
      lines,
    );
    subscriber = await TestSubscriber.start();
    const created = await fetch(`${api().baseUrl}/admin/subscriptions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${HARNESS_ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: subscriber.url, eventTypes: ['post.changed'] }),
    });
    expect(created.status).toBe(201);
  });

  afterAll(async () => {
    await worker?.close();
    await harness?.close();
    await subscriber?.close();
    await collector.receiver?.close();
    await db?.drop();
  });

  it('joins a delivery, its read on the other replica, the guarded write and the notification in one trace', async () => {
    const postId = newPost('traced');
    const event = postEvent(postId, 'post.scheduled');
    expect((await deliver(api().baseUrl, event)).body).toMatchObject({ duplicate: false });
    expect((await deliver(api().baseUrl, event)).body).toMatchObject({ duplicate: true });

    const received = await receiveSpanOf(event.id);
    const duplicate = await receiveSpanOf(event.id, 'duplicate');
    // Each delivery is its own trace; the duplicate's ends at its receive.
    expect(duplicate.traceId).not.toBe(received.traceId);
    expect(received).toMatchObject({
      kind: SPAN_KIND.server,
      parentSpanId: '',
      attributes: { 'http.response.status_code': 200, workspaceId: 'default' },
    });
    expect(received.resource).toMatchObject({ 'service.name': 'pozy-sync-api' });

    const notify = await span('the notification span', (s) => s.traceId === received.traceId && s.name === 'notify post.changed');
    // A span is exported when it ends: the reconcile's may end after the notification it caused was delivered.
    await span('the reconcile span', (s) => s.traceId === received.traceId && s.name === 'reconcile post');
    const trace = collector.receiver.trace(received.traceId);
    const one = (name: string) => {
      const found = trace.filter((s) => s.name === name);
      expect(found.map((s) => s.name)).toEqual([name]);
      return found[0];
    };
    const verify = one('webhook.verify_signature');
    const insert = one('pozy_event.insert');
    const reconcile = one('reconcile post');
    const request = one(POST_ROUTE);
    const write = one('mirror.write post');
    expect([verify.parentSpanId, insert.parentSpanId]).toEqual([received.spanId, received.spanId]);
    // Across the queue, on the other replica.
    expect(reconcile).toMatchObject({
      kind: SPAN_KIND.consumer,
      parentSpanId: received.spanId,
      attributes: { 'pozy_sync.reconcile.outcome': 'written' },
    });
    expect(reconcile.resource['service.instance.id']).not.toBe(received.resource['service.instance.id']);
    expect(request).toMatchObject({
      kind: SPAN_KIND.client,
      parentSpanId: reconcile.spanId,
      attributes: { 'http.response.status_code': 200, 'pozy_sync.lane': 'realtime' },
    });
    expect(trace.find((s) => s.name === 'pozy.budget.wait')?.parentSpanId).toBe(request.spanId);
    expect(write).toMatchObject({
      parentSpanId: reconcile.spanId,
      attributes: {
        'pozy_sync.write.outcome': 'written',
        'pozy_sync.write.changed': true,
        'pozy_sync.feed.entries': 1,
        'pozy_sync.notifications.queued': 1,
      },
    });
    // The feed entry the write appended, in its statement: under the write, naming the feed's row.
    const entry = one('feed entry');
    expect(entry).toMatchObject({
      parentSpanId: write.spanId,
      attributes: {
        workspaceId: 'default',
        'pozy_sync.feed.type': 'post.changed',
        'pozy_sync.resource': `post:${postId}`,
        'pozy_sync.feed.sequence': 1,
      },
    });
    const { rows: feed } = await worker.pool.query<{ id: string; type: string; sequence: number }>(
      'SELECT id::text, type, sequence FROM change WHERE resource_id = $1',
      [postId],
    );
    expect(feed).toEqual([{ id: entry.attributes['pozy_sync.feed.entry_id'], type: 'post.changed', sequence: 1 }]);
    expect(notify).toMatchObject({
      kind: SPAN_KIND.producer,
      parentSpanId: write.spanId,
      attributes: { 'pozy_sync.notification.outcome': 'delivered' },
    });

    // The subscriber can join the trace: its traceparent names the notify span.
    const got = subscriber.about(postId).map((r) => r.headers.traceparent);
    expect(got).toEqual([`00-${received.traceId}-${notify.spanId}-01`]);
    // The worker's lines written while reading for the event carry the trace.
    expect(workerLog.some((line) => line.trace_id === received.traceId && typeof line.span_id === 'string')).toBe(true);
  });

  it("honours Pozy's traceparent: the receive span joins the caller's trace", async () => {
    const traceId = randomBytes(16).toString('hex');
    const parentId = randomBytes(8).toString('hex');
    const event = postEvent(newPost('from a traced sender'), 'post.scheduled');
    expect((await deliver(api().baseUrl, event, { headers: { traceparent: `00-${traceId}-${parentId}-01` } })).status).toBe(200);
    const received = await receiveSpanOf(event.id);
    expect(received).toMatchObject({ traceId, parentSpanId: parentId });
    await span('its read, in the same trace', (s) => s.traceId === traceId && s.name === 'reconcile post');
  });

  it('links one read that serves a coalesced burst to each of the burst receive spans', async () => {
    const postId = newPost('burst');
    const first = postEvent(postId, 'post.scheduled');
    await deliver(api().baseUrl, first);
    const firstReceive = await receiveSpanOf(first.id);
    await span('the first read', (s) => s.traceId === firstReceive.traceId && s.name === 'reconcile post');

    // Inside the window after that read: one pending read for all of them.
    const burst = Array.from({ length: 4 }, () => postEvent(postId, 'post.published'));
    const answers = await Promise.all(burst.map((event) => deliver(api().baseUrl, event)));
    expect(answers.map((a) => a.body.reconcile)).toEqual(burst.map(() => `post:${postId}`));
    const receives = await Promise.all(burst.map((event) => receiveSpanOf(event.id)));
    const reads = () =>
      collector.receiver
        .named('reconcile post')
        .filter((s) => s.attributes['pozy_sync.resource'] === `post:${postId}` && s.traceId !== firstReceive.traceId);
    await waitFor(
      'the burst read',
      async () => {
        await flushed();
        const linked = new Set(reads().flatMap((s) => s.links.map((l) => l.spanId)));
        return receives.every((r) => linked.has(r.spanId)) ? true : undefined;
      },
      30_000,
      100,
    );
    const [read] = reads();
    expect(reads()).toHaveLength(1);
    // Its parent is the first event's receive span; its links name all four, and nothing else.
    expect(read.parentSpanId).toBe(receives.find((r) => r.traceId === read.traceId)?.spanId);
    expect(read.links.map((l) => l.spanId).sort()).toEqual(receives.map((r) => r.spanId).sort());
    expect(read.attributes['pozy_sync.events_served']).toBe(4);
  });

  it("records Pozy's 429 on the request span, and the read that got through", async () => {
    const postId = newPost('rate limited');
    harness.sim.setFaults({ api429Rate: 1, api429RetryAfter: '1' });
    const event = postEvent(postId, 'post.scheduled');
    await deliver(api().baseUrl, event);
    await waitFor('a 429 from Pozy', async () => ((harness.sim.stats().api.byRoute[SIM_POST_ROUTE]?.['429'] ?? 0) > 0 ? true : undefined));
    harness.sim.setFaults({ api429Rate: 0 });
    const received = await receiveSpanOf(event.id);
    await span(
      'the request that got through',
      (s) => s.traceId === received.traceId && s.name === POST_ROUTE && s.attributes['http.response.status_code'] === 200,
    );
    await span(
      'the read that wrote the post',
      (s) => s.traceId === received.traceId && s.name === 'reconcile post' && s.attributes['pozy_sync.reconcile.outcome'] === 'written',
    );
    // Retried inside one request, or (when the budget's pause outlasts what a job waits) by the job again: one trace.
    const trace = collector.receiver.trace(received.traceId);
    const requests = trace.filter((s) => s.name === POST_ROUTE);
    const limited = requests.flatMap((r) => r.events.filter((e) => e.name === 'rate_limited'));
    expect(limited.length).toBeGreaterThan(0);
    expect(limited.every((e) => Number(e.attributes['pozy_sync.retry_after_ms']) > 0)).toBe(true);
    // Every attempt took from the budget, each wait its own span under its request.
    const waits = trace.filter((s) => s.name === 'pozy.budget.wait');
    expect(waits.length).toBeGreaterThanOrEqual(requests.length);
    expect(waits.every((w) => requests.some((r) => r.spanId === w.parentSpanId))).toBe(true);
  });

  it('makes each run a trace of its own, a span per page, named by its run id', async () => {
    const sweep = await worker.app.get(SweepService).start('admin', false);
    const backfill = await worker.app.get(BackfillService).start('admin');
    if (!sweep.started || !backfill.started) throw new Error('a run did not start');
    await worker.app.get(RetentionService).prune();

    const root = (name: string, runId?: string) =>
      span(
        `the ${name} span`,
        (s) => s.name === name && s.parentSpanId === '' && (runId === undefined || s.attributes['pozy_sync.run.id'] === runId),
      );
    const sweepRun = await root('sweep run', sweep.runId);
    const backfillRun = await root('backfill run', backfill.runId);
    const retentionRun = await root('retention run');
    const children = (run: ReceivedSpan, name: string) =>
      collector.receiver.trace(run.traceId).filter((s) => s.name === name && s.parentSpanId === run.spanId);
    expect(children(sweepRun, 'sweep accounts page').length).toBeGreaterThan(0);
    expect(children(sweepRun, 'sweep posts page').length).toBeGreaterThan(0);
    // Its list requests are spans of the run too.
    expect(children(sweepRun, 'GET /v1/posts').length).toBeGreaterThan(0);
    expect(children(backfillRun, 'backfill page').length).toBeGreaterThan(0);
    expect(children(retentionRun, 'retention events')).toHaveLength(1);
    expect(new Set([sweepRun.traceId, backfillRun.traceId, retentionRun.traceId]).size).toBe(3);
  });

  it('answers deliveries while the collector hangs, and does not let it hold the shutdown', async () => {
    // Accepts connections and never answers: the exporter's own timeout (10 s) would hold the shutdown that long.
    const sockets = new Set<Socket>();
    const hanging = createServer((socket) => void sockets.add(socket));
    await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', resolve));
    const service = await startService(db.url, {
      ROLE: 'api',
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(hanging.address() as AddressInfo).port}`,
      OTEL_BSP_SCHEDULE_DELAY: '10',
    });
    try {
      expect((await deliver(service.baseUrl, postEvent('p-hanging', 'post.scheduled'))).status).toBe(200);
      await waitFor('an export begun', async () => (sockets.size > 0 ? true : undefined));
      const closed = service.close().then(() => 'closed');
      const deadline = new Promise((resolve) => setTimeout(() => resolve('still closing after 8 s'), 8_000).unref());
      expect(await Promise.race([closed, deadline])).toBe('closed');
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => hanging.close(resolve));
    }
  });

  it('exports as JSON where asked, as protobuf by default, to the configured endpoint, saying who it is', async () => {
    expect(
      collector.receiver.requests.every((r) => r.path === '/v1/traces' && String(r.headers['content-type']).startsWith('application/json')),
    ).toBe(true);
    expect(new Set(collector.receiver.spans.map((s) => s.resource['service.name']))).toEqual(new Set(['pozy-sync-api', 'pozy-sync']));

    // OTEL_EXPORTER_OTLP_PROTOCOL unset: http/protobuf, with the headers OTEL_EXPORTER_OTLP_HEADERS names.
    const protobuf = await OtlpReceiver.start();
    const service = await startService(db.url, {
      ROLE: 'api',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${protobuf.url}/collector/traces`,
      OTEL_EXPORTER_OTLP_HEADERS: 'x-collector-key=k%3D1',
    });
    try {
      expect((await deliver(service.baseUrl, postEvent('p-protobuf', 'post.scheduled'))).status).toBe(200);
      await service.app.get(Tracing).flush();
      expect(protobuf.requests).toEqual([
        expect.objectContaining({
          path: '/collector/traces',
          headers: expect.objectContaining({ 'content-type': 'application/x-protobuf', 'x-collector-key': 'k=1' }),
        }),
      ]);
      expect(protobuf.requests[0].bytes).toBeGreaterThan(0);
    } finally {
      await service.close();
      await protobuf.close();
    }
  });
});
