import { Test } from '@nestjs/testing';
import { AppConfig } from '../src/config/app-config';
import { ConfigModule } from '../src/config/config.module';
import { DatabaseModule } from '../src/database/database.module';
import { DatabaseService } from '../src/database/database.service';
import { QueueModule } from '../src/queue/queue.module';
import { createTestDatabase, TestDatabase } from './support/database';
import { deliver, postEvent } from './support/pozy-events';
import { queuedJobs } from './support/queue';
import { startService, waitFor } from './support/service';

describe('job queue (graphile-worker inside the service)', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase('worker');
  });

  afterAll(async () => {
    await db?.drop();
  });

  it('runs the reconcile job a new event enqueued, once the coalescing window has passed', async () => {
    const service = await startService(db.url, { RECONCILE_COALESCE_WINDOW_MS: '0' });
    try {
      const response = await deliver(service.baseUrl, postEvent('post-run'));
      expect(response.body.reconcile).toBe('post:post-run');

      // graphile-worker deletes a job when its handler succeeds; a failure would keep it with attempts > 0.
      await waitFor('the reconcile job to complete', async () =>
        (await queuedJobs(service.pool)).length === 0 ? true : undefined,
      );
      const ready = await fetch(`${service.baseUrl}/health/ready`);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toEqual({ status: 'ok', database: 'up', worker: 'running' });
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
    const service = await startService(db.url, { RECONCILE_COALESCE_WINDOW_MS: '0' });
    try {
      // A payload that fails validation is a handler failure graphile-worker retries with backoff.
      await service.pool.query(
        `SELECT graphile_worker.add_job('reconcile', '{"resource":"comment","id":"x"}'::json, job_key => 'bad:1')`,
      );
      const failed = await waitFor('the bad job to fail once', async () => {
        const job = (await queuedJobs(service.pool)).find((j) => j.key === 'bad:1');
        return job && job.attempts >= 1 ? job : undefined;
      });
      const { rows } = await service.pool.query<{ last_error: string }>(
        "SELECT last_error FROM graphile_worker._private_jobs WHERE key = 'bad:1'",
      );
      expect(failed.attempts).toBe(1);
      expect(rows[0].last_error).toMatch(/Invalid reconcile payload: resource/);
    } finally {
      await service.close();
    }
  });
});
