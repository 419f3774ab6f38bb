import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { createTestDatabase } from './support/database';
import { freePort } from './support/ports';
import { deliver, postEvent } from './support/pozy-events';
import { spawnService } from './support/process';
import { TEST_WEBHOOK_SECRET, waitFor } from './support/service';

const ready = (baseUrl: string) => async () => {
  const response = await fetch(`${baseUrl}/health/ready`).catch(() => undefined);
  return response?.status === 200 ? true : undefined;
};

describe('the built service as a process (node dist/main.js)', () => {
  it('stops at boot with a message naming each invalid variable', async () => {
    const service = spawnService({ PORT: 'eighty', POZY_API_URL: 'not a url', DATABASE_URL: 'mysql://x' }, tmpdir());

    expect(await service.exited).toBe(1);
    expect(service.output()).toMatch(/Invalid configuration/);
    expect(service.output()).toMatch(/PORT/);
    expect(service.output()).toMatch(/POZY_API_URL/);
    expect(service.output()).toMatch(/DATABASE_URL must be a postgres/);
  });

  it('starts on the embedded PostgreSQL when DATABASE_URL is unset, answers a webhook, and stops cleanly', async () => {
    // A directory of its own: the embedded cluster lives under <cwd>/.data/postgres.
    const cwd = mkdtempSync(join(tmpdir(), 'pozy-embedded-'));
    chmodSync(cwd, 0o755);
    const [port, databasePort] = [await freePort(), await freePort()];
    const service = spawnService(
      {
        PORT: String(port),
        HOST: '127.0.0.1',
        EMBEDDED_DATABASE_PORT: String(databasePort),
        POZY_API_KEY: 'sk_test_key',
        POZY_WEBHOOK_SECRET: TEST_WEBHOOK_SECRET,
      },
      cwd,
    );
    const baseUrl = `http://127.0.0.1:${port}`;
    try {
      await waitFor('the service to become ready', ready(baseUrl), 60_000, 200);
      const event = postEvent('post-embedded');

      const response = await deliver(baseUrl, event);

      expect(response.status).toBe(200);
      expect(response.body).toMatchObject({ eventId: event.id, duplicate: false });
      // The data directory's own password, generated on its first start, beside it.
      const password = encodeURIComponent(readFileSync(join(cwd, '.data', 'postgres.password'), 'utf8').trim());
      const client = new Client({ connectionString: `postgresql://postgres:${password}@127.0.0.1:${databasePort}/pozy_sync` });
      await client.connect();
      const { rows } = await client.query('SELECT id FROM pozy_event');
      await client.end();
      expect(rows).toEqual([{ id: event.id }]);

      service.child.kill('SIGTERM');
      expect(await service.exited).toBe(0);
      expect(service.output()).toMatch(/Embedded PostgreSQL stopped/);
      // PostgreSQL removes its pid file only on a clean shutdown.
      expect(existsSync(join(cwd, '.data', 'postgres', 'PG_VERSION'))).toBe(true);
      expect(existsSync(join(cwd, '.data', 'postgres', 'postmaster.pid'))).toBe(false);
    } finally {
      if (service.child.exitCode === null) service.child.kill('SIGKILL');
      rmSync(cwd, { recursive: true, force: true });
    }
  });

  it('loses no answered webhook when SIGTERM arrives in the middle of a load', async () => {
    const db = await createTestDatabase('sigterm');
    const port = await freePort();
    const service = spawnService(
      { PORT: String(port), HOST: '127.0.0.1', DATABASE_URL: db.url, POZY_API_KEY: 'sk_test_key', POZY_WEBHOOK_SECRET: TEST_WEBHOOK_SECRET },
      tmpdir(),
    );
    const baseUrl = `http://127.0.0.1:${port}`;
    try {
      await waitFor('the service to become ready', ready(baseUrl), 30_000, 100);
      let answered = 0;
      const events = Array.from({ length: 400 }, (_, i) => postEvent(`post-term-${i % 25}`));
      const results = events.map((event) =>
        deliver(baseUrl, event).then(
          (response) => {
            answered += 1;
            if (answered === 50) service.child.kill('SIGTERM');
            return { id: event.id, status: response.status };
          },
          () => ({ id: event.id, status: 0 }),
        ),
      );
      const outcomes = await Promise.all(results);

      const code = await service.exited;
      if (code !== 0) throw new Error(`exited ${code}:\n${service.output()}`);
      const accepted = outcomes.filter((o) => o.status === 200).map((o) => o.id);
      // Every delivery either got a 200 or failed visibly (refused, reset or 503), which Pozy retries.
      expect(outcomes.every((o) => [0, 200, 503].includes(o.status))).toBe(true);
      expect(accepted.length).toBeGreaterThanOrEqual(50);
      const client = new Client({ connectionString: db.url });
      await client.connect();
      const { rows } = await client.query<{ id: string }>('SELECT id FROM pozy_event WHERE id = ANY($1)', [accepted]);
      await client.end();
      expect(rows.map((r) => r.id).sort()).toEqual([...accepted].sort());
    } finally {
      if (service.child.exitCode === null) service.child.kill('SIGKILL');
      await db.drop();
    }
  });

  it('fails readiness while draining on SIGTERM, still answers webhooks meanwhile, then exits 0', async () => {
    const db = await createTestDatabase('draining');
    const port = await freePort();
    const service = spawnService(
      {
        PORT: String(port),
        HOST: '127.0.0.1',
        DATABASE_URL: db.url,
        POZY_API_KEY: 'sk_test_key',
        POZY_WEBHOOK_SECRET: TEST_WEBHOOK_SECRET,
        SHUTDOWN_DRAIN_MS: '3000',
      },
      tmpdir(),
    );
    const baseUrl = `http://127.0.0.1:${port}`;
    try {
      await waitFor('the service to become ready', ready(baseUrl), 30_000, 100);
      const before = (await (await fetch(`${baseUrl}/health/ready`)).json()) as { status: string; details: Record<string, { status: string }> };
      expect(before).toMatchObject({
        status: 'ok',
        details: { draining: { status: 'up' }, database: { status: 'up' }, migrations: { status: 'up' }, worker: { status: 'up' } },
      });

      service.child.kill('SIGTERM');
      const draining = await waitFor('readiness to fail', async () => {
        const response = await fetch(`${baseUrl}/health/ready`);
        return response.status === 503 ? ((await response.json()) as Record<string, unknown>) : undefined;
      });
      expect(draining).toMatchObject({
        error: 'not_ready',
        message: 'Not ready: draining',
        details: { draining: { status: 'down' }, database: { status: 'up' } },
      });
      // Liveness holds, and a delivery routed here before the load balancer noticed is still stored.
      expect((await fetch(`${baseUrl}/health/live`)).status).toBe(200);
      const event = postEvent('post-draining');
      expect((await deliver(baseUrl, event)).status).toBe(200);

      expect(await service.exited).toBe(0);
      expect(service.output()).toMatch(/Draining for 3000 ms/);
      const client = new Client({ connectionString: db.url });
      await client.connect();
      const { rows } = await client.query('SELECT id FROM pozy_event WHERE id = $1', [event.id]);
      await client.end();
      expect(rows).toHaveLength(1);
    } finally {
      if (service.child.exitCode === null) service.child.kill('SIGKILL');
      await db.drop();
    }
  });

  it('exits 0 on SIGTERM after finishing with its database', async () => {
    const db = await createTestDatabase('process');
    const port = await freePort();
    const service = spawnService({ PORT: String(port), HOST: '127.0.0.1', DATABASE_URL: db.url, POZY_API_KEY: 'sk_test_key' }, tmpdir());
    try {
      await waitFor('the service to become ready', ready(`http://127.0.0.1:${port}`), 30_000, 100);
      expect(service.output()).toMatch(/POZY_WEBHOOK_SECRET is not set/);

      service.child.kill('SIGTERM');

      expect(await service.exited).toBe(0);
      expect(service.output()).toMatch(/SIGTERM received: shutting down/);
      expect(service.output()).toMatch(/Worker stopped/);
    } finally {
      if (service.child.exitCode === null) service.child.kill('SIGKILL');
      await db.drop();
    }
  });
});
