import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { Pool } from 'pg';
import { mirrorDifferences } from '../simulator/mirror-check';
import { PozySimulator } from '../simulator/simulator';
import type { PozyEvent } from '../simulator/world/pozy-shapes';
import { createTestDatabase, TestDatabase } from './support/database';
import { freePort } from './support/ports';
import { deliver } from './support/pozy-events';
import { spawnService } from './support/process';
import { TEST_WEBHOOK_SECRET, waitFor } from './support/service';

describe('SIGKILL in the middle of a load of webhooks', () => {
  let db: TestDatabase;
  let sim: PozySimulator;
  let direct: Pool;
  let spoolDir: string;

  beforeAll(async () => {
    db = await createTestDatabase('crash');
    sim = await PozySimulator.start({ apiKey: 'sk_sim_crash', seed: 5, rateLimitPerMinute: 100_000 });
    direct = db.pool(2);
    spoolDir = mkdtempSync(join(tmpdir(), 'pozy-crash-spool-'));
    chmodSync(spoolDir, 0o755);
  });

  afterAll(async () => {
    await direct?.end();
    await sim?.stop();
    await db?.drop();
    rmSync(spoolDir, { recursive: true, force: true });
  });

  it('keeps every event it answered 2xx (store or spool), and the mirror converges after a restart', async () => {
    const world = sim.world;
    const events: PozyEvent[] = [];
    world.onEvent((e) => events.push(e));
    const profile = world.createProfile('Crash');
    const accounts = ['linkedin', 'instagram', 'twitter'].map((p) => world.connectAccount(profile._id, p, `crash-${p}`));
    for (let i = 0; i < 60; i += 1) {
      const post = world.createPost({ content: `post ${i}`, accountIds: accounts.map((a) => a._id), scheduledFor: Date.now() + 60_000 });
      world.publishPost(post._id);
    }
    const port = await freePort();
    const env = {
      PORT: String(port),
      HOST: '127.0.0.1',
      DATABASE_URL: db.url,
      POZY_API_URL: sim.url,
      POZY_API_KEY: sim.apiKey,
      POZY_WEBHOOK_SECRET: TEST_WEBHOOK_SECRET,
      POZY_RATE_LIMIT_PER_MINUTE: '100000',
      SPOOL_DIR: spoolDir,
      BACKFILL_CRON: 'off',
      INITIAL_IMPORT: 'off',
      LOG_LEVEL: 'warn',
    };
    const baseUrl = `http://127.0.0.1:${port}`;
    const ready = async () => ((await fetch(`${baseUrl}/health/ready`).catch(() => undefined))?.status === 200 ? true : undefined);

    const first = spawnService(env, tmpdir());
    await waitFor('the service to become ready', ready, 30_000, 100);
    const answered = new Set<string>();
    // A steady load, 8 deliveries at a time, killed after the 150th answer: deliveries in flight then fail.
    const queue = [...events];
    const sender = async () => {
      for (let event = queue.shift(); event; event = queue.shift()) {
        const response = await deliver(baseUrl, event as never).catch(() => undefined);
        if (response?.status === 200) answered.add(event.id);
        if (answered.size === 150) first.child.kill('SIGKILL');
      }
    };
    await Promise.all(Array.from({ length: 8 }, sender));
    await first.exited;
    expect(answered.size).toBeGreaterThanOrEqual(150);
    expect(answered.size).toBeLessThan(events.length);

    const { rows } = await direct.query<{ id: string }>('SELECT id FROM pozy_event');
    const spool = new Database(join(spoolDir, 'spool.sqlite'), { readonly: true, fileMustExist: false });
    const spooled = (spool.prepare('SELECT event_id FROM spooled').all() as Array<{ event_id: string }>).map((r) => r.event_id);
    spool.close();
    const safe = new Set([...rows.map((r) => r.id), ...spooled]);
    expect([...answered].filter((id) => !safe.has(id))).toEqual([]);

    // Restarted; Pozy retries what it never got a 2xx for.
    const second = spawnService(env, tmpdir());
    try {
      await waitFor('the restarted service to become ready', ready, 30_000, 100);
      for (const event of events.filter((e) => !answered.has(e.id))) {
        expect((await deliver(baseUrl, event as never)).status).toBe(200);
      }
      const ids = events.map((e) => e.id);
      await waitFor('every event stored', async () => {
        const { rows: now } = await direct.query('SELECT count(*)::int AS n FROM pozy_event WHERE id = ANY($1)', [ids]);
        return now[0].n === ids.length ? true : undefined;
      });
      // Jobs the killed worker had locked are freed once it has missed its heartbeats (30 s).
      await waitFor(
        'the mirror to converge',
        async () => {
          const { rows: backlog } = await direct.query(
            `SELECT (SELECT count(*) FROM reconcile_request WHERE due_at IS NOT NULL) + (SELECT count(*) FROM graphile_worker._private_jobs) AS n`,
          );
          if (Number(backlog[0].n) > 0) return undefined;
          const differences = await mirrorDifferences(direct, world, {
            postIds: world.listPosts().map((p) => p._id),
            profileIds: [profile._id],
          });
          return differences.length === 0 ? true : undefined;
        },
        90_000,
        500,
      );
    } finally {
      second.child.kill('SIGTERM');
      await second.exited;
    }
  }, 180_000);
});
