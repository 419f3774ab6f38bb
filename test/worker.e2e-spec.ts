import { Test } from '@nestjs/testing';
import { AppConfig } from '../src/config/app-config';
import { ConfigModule } from '../src/config/config.module';
import { DatabaseModule } from '../src/database/database.module';
import { DatabaseService } from '../src/database/database.service';
import { QueueModule } from '../src/queue/queue.module';
import { WorkerService } from '../src/queue/worker.service';
import type { Runner } from 'graphile-worker';
import { ReconcileTask } from '../src/reconcile/reconcile.task';
import { PozySimulator } from '../simulator/simulator';
import { createTestDatabase, TestDatabase } from './support/database';
import { deliver, postEvent } from './support/pozy-events';
import { queuedJobs, reconcileRequests } from './support/queue';
import { startService, waitFor } from './support/service';

describe('job queue (graphile-worker inside the service)', () => {
  let db: TestDatabase;
  let sim: PozySimulator;
  /** The service reads this simulator's API; its events are delivered by the tests themselves. */
  let pozy: Record<string, string>;
  let postId: string;
  let accountId: string;

  beforeAll(async () => {
    db = await createTestDatabase('worker');
    sim = await PozySimulator.start({ apiKey: 'sk_sim_worker', seed: 3 });
    pozy = { POZY_API_URL: sim.url, POZY_API_KEY: sim.apiKey };
    const profile = sim.world.createProfile('Worker test');
    const account = sim.world.connectAccount(profile._id, 'linkedin', 'worker');
    accountId = account._id;
    postId = sim.world.createPost({ content: 'x', accountIds: [account._id], scheduledFor: Date.now() + 60_000 })._id;
  });

  afterAll(async () => {
    await sim?.stop();
    await db?.drop();
  });

  it("hands a new event's reconcile request to the worker, which runs it once", async () => {
    const service = await startService(db.url, { ...pozy, RECONCILE_COALESCE_WINDOW_MS: '0' });
    const handle = jest.spyOn(service.app.get(ReconcileTask), 'handle');
    try {
      const response = await deliver(service.baseUrl, postEvent(postId));
      expect(response.body.reconcile).toBe(`post:${postId}`);

      await waitFor('the reconcile job to run', async () => (handle.mock.calls.length > 0 ? true : undefined));
      // graphile-worker deletes a job once its handler succeeded.
      await waitFor('the queue to empty', async () => ((await queuedJobs(service.pool)).length === 0 ? true : undefined));
      expect(handle.mock.calls.map(([payload]) => ({ ...payload }))).toEqual([{ workspace: 'default', resource: 'post', id: postId }]);
      expect(await reconcileRequests(service.pool)).toEqual([]);
      const { rows } = await service.pool.query('SELECT id, status FROM post');
      expect(rows).toEqual([{ id: postId, status: 'scheduled' }]);
      const ready = await fetch(`${service.baseUrl}/health/ready`);
      expect(await ready.json()).toMatchObject({ status: 'ok', details: { database: { status: 'up' }, worker: { status: 'up', running: true } } });
    } finally {
      await service.close();
    }
  });

  it('starts a new job runner when graphile-worker stops its own, and reads what arrives after', async () => {
    const service = await startService(db.url, { ...pozy, RECONCILE_COALESCE_WINDOW_MS: '0' });
    try {
      const worker = service.app.get(WorkerService);
      // What graphile-worker does when its worker pool fails (a connection not given within the pool's timeout).
      await (worker as unknown as { runner: Runner }).runner.kill('its worker pool failed');
      const later = sim.world.createPost({ content: 'after the runner stopped', accountIds: [accountId], scheduledFor: Date.now() + 60_000 })._id;
      expect((await deliver(service.baseUrl, postEvent(later))).status).toBe(200);
      await waitFor(
        'the post read by the new runner',
        async () => ((await service.pool.query('SELECT 1 FROM post WHERE id = $1', [later])).rowCount ? true : undefined),
        60_000,
        100,
      );
      expect(worker.running).toBe(true);
      const ready = await fetch(`${service.baseUrl}/health/ready`);
      expect(await ready.json()).toMatchObject({ details: { worker: { status: 'up', running: true } } });
    } finally {
      await service.close();
    }
  });

  it('reads a quiet post at once, and a burst of 20 events for it with at most one more read', async () => {
    // A window long beside anything a busy machine adds to the first read, so that "not held back by it" shows.
    const windowMs = 10_000;
    const service = await startService(db.url, { ...pozy, RECONCILE_COALESCE_WINDOW_MS: String(windowMs) });
    const task = service.app.get(ReconcileTask);
    const handle = task.handle.bind(task);
    const runs: number[] = [];
    jest.spyOn(task, 'handle').mockImplementation((payload, helpers) => {
      runs.push(Date.now());
      return handle(payload, helpers);
    });
    try {
      const started = Date.now();
      for (let i = 0; i < 19; i += 1) await deliver(service.baseUrl, postEvent(postId, 'post.platform.published'));
      const beforeLast = Date.now();
      await deliver(service.baseUrl, postEvent(postId, 'post.published'));

      await waitFor('the first read', async () => (runs.length > 0 ? true : undefined));
      // A busy database acknowledges through the spool (ACK_TIMEOUT_MS), the insert and its request coming later:
      // nothing is left to read only once all 20 are stored.
      const stored = async () =>
        (
          await service.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM pozy_event WHERE resource_id = $1 AND received_at >= $2', [
            postId,
            new Date(started),
          ])
        ).rows[0].n;
      await waitFor('the 20 events stored', async () => ((await stored()) === 20 ? true : undefined), 60_000);
      const burstMs = Date.now() - started;
      await waitFor('nothing left to read', async () =>
        (await queuedJobs(service.pool)).length === 0 && (await reconcileRequests(service.pool)).length === 0 ? true : undefined,
      );
      // The first event of a quiet post is not held back by the window...
      expect(runs[0] - started).toBeLessThan(windowMs);
      // ...and the rest of the burst costs at most one more read (one per window, on a machine so slow that storing
      // the burst outlasted it), whose request to Pozy was sent after the last event was received, so the mirror ends on the
      // post's final state.
      expect(runs.length).toBeLessThanOrEqual(2 + Math.floor(burstMs / windowMs));
      const { rows } = await service.pool.query<{ received: Date }>('SELECT max(received_at) AS received FROM pozy_event WHERE resource_id = $1', [
        postId,
      ]);
      const { rows: reads } = await service.pool.query<{ sent: Date }>(
        'SELECT max(sent_at) AS sent FROM reconcile_read WHERE resource_key = $1 AND at >= $2',
        [`post:${postId}`, new Date(started)],
      );
      expect(reads[0].sent.getTime()).toBeGreaterThanOrEqual(rows[0].received.getTime());
      expect(reads[0].sent.getTime()).toBeGreaterThanOrEqual(beforeLast);
    } finally {
      await service.close();
    }
  });

  it('leaves reconcile requests to worker replicas when ROLE=api, and a ROLE=worker replica runs them', async () => {
    await db.drop();
    db = await createTestDatabase('worker');
    const api = await startService(db.url, { ...pozy, ROLE: 'api', RECONCILE_COALESCE_WINDOW_MS: '0' });
    try {
      await deliver(api.baseUrl, postEvent(postId));
      const ready = await fetch(`${api.baseUrl}/health/ready`);
      expect(await ready.json()).toMatchObject({
        status: 'ok',
        details: { database: { status: 'up' }, worker: { status: 'up', role: 'api', running: false } },
      });
      expect((await reconcileRequests(api.pool)).map((r) => r.key)).toEqual([`post:${postId}`]);
      expect(await queuedJobs(api.pool)).toEqual([]);

      // On the class, before the replica starts: its first look at the queue may run the job before it is up.
      const handle = jest.spyOn(ReconcileTask.prototype, 'handle');
      const worker = await startService(db.url, { ...pozy, ROLE: 'worker' });
      try {
        await waitFor('the worker replica to run the job', async () => (handle.mock.calls.length > 0 ? true : undefined));
        // Started is not finished: the job's counters are written when it ends.
        await handle.mock.results[0].value;
        expect(handle.mock.calls.map(([payload]) => ({ ...payload }))).toEqual([{ workspace: 'default', resource: 'post', id: postId }]);
        expect(await reconcileRequests(api.pool)).toEqual([]);
        // A worker serves probes and scrapes, nothing else: webhooks and the API belong to api replicas.
        expect((await fetch(`${worker.baseUrl}/health/ready`)).status).toBe(200);
        expect(await (await fetch(`${worker.baseUrl}/metrics`)).text()).toMatch(/pozy_sync_reconcile_jobs_total\{resource="post",outcome="/);
        const webhook = await fetch(`${worker.baseUrl}/webhooks/pozy`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{}',
        });
        expect(webhook.status).toBe(404);
        expect((await fetch(`${worker.baseUrl}/posts`)).status).toBe(404);
      } finally {
        handle.mockRestore();
        await worker.close();
      }
    } finally {
      await api.close();
    }
  });

  it('runs a job a killed worker had locked, once that worker has missed its heartbeats', async () => {
    const service = await startService(db.url, { ...pozy, RECONCILE_COALESCE_WINDOW_MS: '0' });
    const handle = jest.spyOn(service.app.get(ReconcileTask), 'handle');
    try {
      // A job fetched by a worker pool that died: locked, and no heartbeat from it.
      const client = await service.pool.connect();
      try {
        // One transaction, so that no worker can take the job before it is locked.
        await client.query('BEGIN');
        const { rows } = await client.query<{ id: string }>(
          `SELECT (graphile_worker.add_job('reconcile', json_build_object('resource', 'post', 'id', $1::text), job_key => 'orphan')).id`,
          [postId],
        );
        const locked = await client.query(`UPDATE graphile_worker._private_jobs SET locked_at = now(), locked_by = 'pool-killed' WHERE id = $1`, [
          rows[0].id,
        ]);
        expect(locked.rowCount).toBe(1);
        await client.query('COMMIT');
      } finally {
        client.release();
      }

      await waitFor('the orphaned job to run', async () => (handle.mock.calls.length > 0 ? true : undefined), 20_000);
      // Queued as a version before workspaces queued its jobs: no workspace, read as the default one's.
      expect(handle.mock.calls.map(([payload]) => ({ ...payload }))).toEqual([{ resource: 'post', id: postId }]);
    } finally {
      await service.close();
    }
  });

  it('refuses to start when a task in the registry has no handler', async () => {
    const config = AppConfig.fromEnvironment({ DATABASE_URL: db.url, POZY_API_KEY: 'sk_test_key' });
    // The queue without the reconcile module: `reconcile` is registered but nothing handles it.
    const moduleRef = await Test.createTestingModule({
      imports: [ConfigModule.forRoot(config), DatabaseModule, QueueModule],
    }).compile();
    moduleRef.useLogger(false);

    await expect(moduleRef.init()).rejects.toThrow('No @TaskHandler for task(s): reconcile');
    // close() would re-raise the failed init; the pool is all there is to release.
    await moduleRef.get(DatabaseService).pool.end();
  });

  it('leaves a job whose handler keeps failing in the queue, visible with its attempts', async () => {
    const service = await startService(db.url, { ...pozy, RECONCILE_COALESCE_WINDOW_MS: '0' });
    try {
      // A payload that fails validation is a handler failure graphile-worker retries with backoff.
      await service.pool.query(`SELECT graphile_worker.add_job('reconcile', '{"resource":"comment","id":"x"}'::json, job_key => 'bad:1')`);
      // graphile-worker counts the attempt when it takes the job, and writes the error when the job fails.
      const failed = await waitFor('the bad job to fail once', async () => {
        const { rows } = await service.pool.query<{ attempts: number; last_error: string | null }>(
          "SELECT attempts, last_error FROM graphile_worker._private_jobs WHERE key = 'bad:1'",
        );
        return rows[0]?.last_error ? rows[0] : undefined;
      });
      expect(failed.attempts).toBe(1);
      expect(failed.last_error).toMatch(/Invalid reconcile payload: resource/);
    } finally {
      await service.close();
    }
  });
});
