import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { Pool, PoolClient } from 'pg';
import { createTestDatabase, TestDatabase } from './support/database';
import { request } from './support/http';
import { postEvent } from './support/pozy-events';
import { RunningService, startService, waitFor } from './support/service';

const ADMIN_TOKEN = 'replay-admin-token-8d2f';
const ADMIN = { authorization: `Bearer ${ADMIN_TOKEN}` };
/** Each wait's deadline: generous for CI's two busy cores (a 15 s wait for five batches ran out under a load of 10); nothing asserted depends on it. */
const DEADLINE_MS = 120_000;

interface Run {
  id: string;
  queue: string;
  status: string;
  total: number;
  replayed: number;
  skipped: number;
  batches: number;
  error: string | null;
  spoolId: string | null;
}

/**
 * `count` reconcile letters of profiles `<prefix>-<i>`, oldest first, three at a time sharing one created_at (so the
 * walk's order falls back on the id); answers their ids in the order a replay takes them.
 */
async function insertReconcileLetters(pool: Pool, prefix: string, count: number): Promise<string[]> {
  const { rows } = await pool.query<{ id: string }>(
    `INSERT INTO dead_letter (workspace_id, id, queue, kind, resource_key, payload, reason, error, attempts, first_failure_at, last_failure_at, created_at)
     SELECT 'default', gen_random_uuid(), 'delivery', 'reconcile', 'profile:' || $1 || '-' || i,
            jsonb_build_object('resource', 'profile', 'id', $1 || '-' || i), 'timed out or was unreachable for over 60 s',
            'TimeoutError: aborted', 5, now() - interval '2 hours', now() - interval '1 hour',
            now() - interval '1 hour' + (i / 3) * interval '1 millisecond'
     FROM generate_series(0, $2 - 1) AS i
     RETURNING id`,
    [prefix, count],
  );
  const ordered = await pool.query<{ id: string }>('SELECT id FROM dead_letter WHERE id = ANY($1) ORDER BY created_at, id', [rows.map((r) => r.id)]);
  return ordered.rows.map((r) => r.id);
}

/** Dead notifications of an inactive subscription, each with its letter, created after every reconcile letter. */
async function insertNotificationLetters(pool: Pool, resources: number, olderVersions: number): Promise<void> {
  const subscription = randomUUID();
  await pool.query(`INSERT INTO subscription (id, url, event_types, active) VALUES ($1, 'https://hooks.example.com/x', '{post.changed}', false)`, [
    subscription,
  ]);
  await pool.query(
    `WITH versions AS (
       SELECT r, s, 'msg_' || md5($1::text || r || '-' || s) AS id, 'post:' || lpad(to_hex(r), 24, '0') AS key
       FROM generate_series(1, $2) AS r, generate_series(1, 2) AS s
       WHERE s = 2 OR r <= $3
     ), notes AS (
       INSERT INTO notification (workspace_id, id, subscription_id, type, resource_key, sequence, data, state, next_attempt_at, created_at)
       SELECT 'default', id, $1::uuid, 'post.changed', key, s, '{}'::jsonb, 'dead', NULL, now() - interval '30 minutes' + s * interval '1 second'
       FROM versions
     )
     INSERT INTO dead_letter (workspace_id, id, queue, kind, resource_key, payload, reason, error, attempts, first_failure_at, last_failure_at, created_at)
     SELECT 'default', gen_random_uuid(), 'delivery', 'notification', key,
            jsonb_build_object('notificationId', id, 'subscriptionId', $1::text, 'type', 'post.changed', 'sequence', s),
            'the subscriber answered 400', 'HTTP 400', 1, now() - interval '30 minutes', now() - interval '30 minutes',
            now() - interval '30 minutes' + s * interval '1 second' + r * interval '1 millisecond'
     FROM versions`,
    [subscription, resources, olderVersions],
  );
}

describe('bulk dead-letter replay: a run in batches, followed through its GET', () => {
  let db: TestDatabase;
  let direct: Pool;
  let service: RunningService;
  const spoolDir = mkdtempSync(join(tmpdir(), 'pozy-replay-spool-'));
  const env = { ROLE: 'api', ADMIN_TOKEN, SPOOL_DIR: spoolDir };

  const call = <T>(method: string, path: string, headers: Record<string, string> = ADMIN) => request<T>(service, path, { method, headers });
  const startReplay = (queue: string) =>
    call<{ runId: string; queue: string; count: number; error?: string; details?: { runId: string } }>(
      'POST',
      `/admin/dead-letters/replay?queue=${queue}`,
    );
  const getRun = async (runId: string) => (await call<Run>('GET', `/admin/dead-letters/replay/${runId}`)).body;
  const finished = (runId: string) =>
    waitFor(
      `replay ${runId} to finish`,
      async () => {
        const run = await getRun(runId);
        return run.status === 'running' ? undefined : run;
      },
      DEADLINE_MS,
    );

  /** Holds a letter's row lock: a replay reaching it waits there, mid-run, until the lock is let go. */
  async function holdLetter(id: string): Promise<PoolClient> {
    const client = await direct.connect();
    await client.query('BEGIN');
    await client.query('SELECT id FROM dead_letter WHERE id = $1 FOR UPDATE', [id]);
    return client;
  }
  async function letGo(client: PoolClient): Promise<void> {
    await client.query('ROLLBACK');
    client.release();
  }

  beforeAll(async () => {
    db = await createTestDatabase('dead_letter_replay');
    direct = db.pool(3);
    service = await startService(db.url, env);
  });

  afterAll(async () => {
    await service?.close();
    await direct?.end();
    await db?.drop();
  });

  afterEach(async () => {
    await direct.query('DELETE FROM dead_letter');
  });

  it('replays thousands of delivery letters in batches of 200, answering 202 at once; 409 for a second run meanwhile', async () => {
    const order = await insertReconcileLetters(direct, 'bulk', 3_000);
    await insertNotificationLetters(direct, 40, 10);
    // Already settled: a run leaves them as they are.
    await direct.query(
      `INSERT INTO dead_letter (workspace_id, id, queue, kind, resource_key, payload, reason, error, attempts, first_failure_at, last_failure_at, replayed_at, replay_count, resolved_at)
       SELECT 'default', gen_random_uuid(), 'delivery', 'reconcile', 'profile:settled-' || i, jsonb_build_object('resource', 'profile', 'id', 'settled-' || i),
              'r', 'e', 1, now(), now(), CASE WHEN i % 2 = 0 THEN now() END, CASE WHEN i % 2 = 0 THEN 1 ELSE 0 END, CASE WHEN i % 2 = 1 THEN now() END
       FROM generate_series(1, 6) AS i`,
    );
    expect(await call('POST', '/admin/dead-letters/replay?queue=delivery&dryRun=true')).toEqual({
      status: 202,
      body: { queue: 'delivery', count: 3_050, replayed: false },
    });

    // The 1,001st letter is held: the run stops there, in its sixth batch, until it is let go.
    const held = await holdLetter(order[1_000]);
    let runId: string;
    try {
      const start = await startReplay('delivery');
      expect(start).toEqual({ status: 202, body: { runId: expect.any(String), queue: 'delivery', count: 3_050 } });
      runId = start.body.runId;

      const midway = await waitFor(
        'five batches done',
        async () => {
          const run = await getRun(runId);
          return run.batches === 5 ? run : undefined;
        },
        DEADLINE_MS,
      );
      expect(midway).toMatchObject({ queue: 'delivery', status: 'running', total: 3_050, replayed: 1_000, skipped: 0, error: null });
      const second = await startReplay('delivery');
      expect(second).toMatchObject({ status: 409, body: { error: 'replay_running', details: { runId } } });
    } finally {
      await letGo(held);
    }

    const run = await finished(runId);
    // Each older version of a resource is skipped: its newer one, replayed, is what the subscriber gets.
    expect(run).toMatchObject({ status: 'succeeded', total: 3_050, replayed: 3_040, skipped: 10, batches: 16, error: null });
    const letters = await direct.query<{ kind: string; replayed: number; untouched: number; count: number }>(
      `SELECT kind, count(*) FILTER (WHERE replayed_at IS NOT NULL AND replay_count = 1)::int AS replayed,
              count(*) FILTER (WHERE replayed_at IS NULL)::int AS untouched, count(*)::int AS count
       FROM dead_letter WHERE resource_key NOT LIKE 'profile:settled-%' GROUP BY kind ORDER BY kind`,
    );
    expect(letters.rows).toEqual([
      { kind: 'notification', replayed: 40, untouched: 10, count: 50 },
      { kind: 'reconcile', replayed: 3_000, untouched: 0, count: 3_000 },
    ]);
    // Each replayed letter was replayed: a forced read of its profile, its notification due again.
    const reads = await direct.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM reconcile_request WHERE key LIKE 'profile:bulk-%' AND forced_at IS NOT NULL`,
    );
    expect(reads.rows[0].n).toBe(3_000);
    const notes = await direct.query<{ state: string; sequence: number; n: number }>(
      'SELECT state, sequence, count(*)::int AS n FROM notification GROUP BY state, sequence ORDER BY state, sequence',
    );
    expect(notes.rows).toEqual([
      { state: 'dead', sequence: 1, n: 10 },
      { state: 'pending', sequence: 2, n: 40 },
    ]);
    const settled = await direct.query<{ replay_count: number; replayed_at: Date | null }>(
      `SELECT replay_count, replayed_at FROM dead_letter WHERE resource_key LIKE 'profile:settled-%' ORDER BY resource_key`,
    );
    expect(settled.rows.map((r) => [r.replay_count, r.replayed_at !== null])).toEqual([
      [0, false],
      [1, true],
      [0, false],
      [1, true],
      [0, false],
      [1, true],
    ]);
  }, 300_000);

  it('replays the ack queue (a few large events among hundreds) in batches bounded in bytes, and empties it', async () => {
    const spool = new Database(join(spoolDir, 'spool.sqlite'));
    const insert = spool.prepare(
      `INSERT INTO spooled (id, workspace_id, event_id, event, spooled_at, attempts, next_attempt_at, first_timeout_at, last_error, state, dead_at)
       VALUES (?, 'default', ?, ?, ?, 2, NULL, ?, 'the database did not acknowledge within 2000 ms', 'dead', ?)`,
    );
    const now = Date.now();
    const events = Array.from({ length: 300 }, (_, i) =>
      postEvent('66aa01f3c2b1e4d5f6a7b8c9', 'post.published', {
        post: { id: '66aa01f3c2b1e4d5f6a7b8c9', content: i % 12 === 0 ? 'x'.repeat(900_000) : `event ${i}` },
      }),
    );
    spool.transaction(() => {
      events.forEach((event, i) => {
        const stored = {
          id: event.id,
          type: event.event,
          payloadJson: JSON.stringify(event),
          timestamp: event.timestamp,
          deliveryId: null,
          attempt: 1,
          test: false,
          reconcile: null,
          recoveredBy: null,
        };
        insert.run(randomUUID(), event.id, JSON.stringify(stored), now - 60_000, now - 60_000, now - 10_000 + i);
      });
    })();
    spool.close();

    const start = await startReplay('ack');
    expect(start).toEqual({ status: 202, body: { runId: expect.any(String), queue: 'ack', count: 300 } });
    const run = await finished(start.body.runId);

    // 25 events of 0.9 MB: at least six batches of 4 MiB or less for those alone.
    expect(run).toMatchObject({ queue: 'ack', status: 'succeeded', total: 300, replayed: 300, skipped: 0, error: null, spoolId: expect.any(String) });
    expect(run.batches).toBeGreaterThanOrEqual(6);
    const stored = await direct.query<{ n: number; large: number }>(
      `SELECT count(*)::int AS n, count(*) FILTER (WHERE length(payload -> 'post' ->> 'content') = 900000)::int AS large FROM pozy_event WHERE id = ANY($1)`,
      [events.map((e) => e.id)],
    );
    expect(stored.rows[0]).toEqual({ n: 300, large: 25 });
    expect(await call('GET', '/admin/dead-letters?queue=ack')).toEqual({ status: 200, body: { data: [] } });
  }, 300_000);

  it('a run its replica stopped mid-way leaves every letter replayed or still waiting; the next run takes the rest', async () => {
    const order = await insertReconcileLetters(direct, 'cut', 600);
    const held = await holdLetter(order[250]);
    let runId: string;
    let closing: Promise<void> | undefined;
    try {
      runId = (await startReplay('delivery')).body.runId;
      await waitFor(
        'the run to wait for the held letter',
        async () => {
          const { rows } = await direct.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM pg_stat_activity
           WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'update "dead_letter"%'`,
          );
          return rows[0].n === 1 ? true : undefined;
        },
        DEADLINE_MS,
      );
      closing = service.close();
      // Once shutting down, the replica refuses new runs: from then on, the run stops after the letter it is on.
      await waitFor('the replica to shut down', async () => ((await startReplay('delivery')).status === 503 ? true : undefined), DEADLINE_MS);
    } finally {
      await letGo(held);
    }
    await closing;

    const { rows: runs } = await direct.query<{ status: string; replayed: number; batches: number; error: string }>(
      'SELECT status, replayed, batches, error FROM dead_letter_replay_run WHERE id = $1',
      [runId],
    );
    expect(runs).toEqual([{ status: 'interrupted', replayed: 251, batches: 1, error: expect.stringMatching(/shut down before the run finished/) }]);
    const letters = await direct.query<{ id: string; replayed: boolean; read: boolean }>(
      `SELECT d.id, d.replayed_at IS NOT NULL AS replayed, r.forced_at IS NOT NULL AS read
       FROM dead_letter d LEFT JOIN reconcile_request r ON r.key = d.resource_key WHERE d.id = ANY($1)`,
      [order],
    );
    const byId = new Map(letters.rows.map((r) => [r.id, r]));
    // Replayed up to the letter it was on, and nothing after: none marked replayed without its read requested.
    expect(order.map((id) => byId.get(id)!.replayed)).toEqual(order.map((_, i) => i <= 250));
    expect(letters.rows.filter((r) => r.replayed && !r.read)).toEqual([]);
    expect(letters.rows.filter((r) => !r.replayed && r.read)).toEqual([]);

    service = await startService(db.url, env);
    expect(await getRun(runId)).toMatchObject({ status: 'interrupted', replayed: 251 });
    const next = await startReplay('delivery');
    expect(next.body.count).toBe(349);
    expect(await finished(next.body.runId)).toMatchObject({ status: 'succeeded', total: 349, replayed: 349, skipped: 0 });
    const counts = await direct.query<{ replay_count: number; n: number }>(
      'SELECT replay_count, count(*)::int AS n FROM dead_letter WHERE id = ANY($1) GROUP BY replay_count',
      [order],
    );
    expect(counts.rows).toEqual([{ replay_count: 1, n: 600 }]);
  }, 300_000);

  it('answers a run whose replica died (no heartbeat for 30 s) as interrupted, and starts the next one', async () => {
    const dead = randomUUID();
    await direct.query(
      `INSERT INTO dead_letter_replay_run (id, queue, status, host, started_at, heartbeat_at, total, replayed, batches)
       VALUES ($1, 'delivery', 'running', 'gone-host', now() - interval '5 minutes', now() - interval '4 minutes', 1000, 200, 1)`,
      [dead],
    );
    expect(await getRun(dead)).toMatchObject({ status: 'interrupted', replayed: 200 });

    const next = await startReplay('delivery');
    expect(next.status).toBe(202);
    await finished(next.body.runId);
    const { rows } = await direct.query<{ status: string; error: string }>('SELECT status, error FROM dead_letter_replay_run WHERE id = $1', [dead]);
    expect(rows).toEqual([{ status: 'interrupted', error: 'its replica stopped before the run finished' }]);
  });

  it.each([
    [401, 'POST without a token', 'POST', '/admin/dead-letters/replay?queue=delivery', {}],
    [403, 'POST with a wrong token', 'POST', '/admin/dead-letters/replay?queue=ack', { authorization: 'Bearer nope' }],
    [400, 'POST without a queue', 'POST', '/admin/dead-letters/replay', ADMIN],
    [400, 'POST of an unknown queue', 'POST', '/admin/dead-letters/replay?queue=everything', ADMIN],
    [401, 'GET without a token', 'GET', `/admin/dead-letters/replay/${randomUUID()}`, {}],
    [400, 'GET a run id that is not a UUID', 'GET', '/admin/dead-letters/replay/run-1', ADMIN],
    [404, 'GET an unknown run', 'GET', `/admin/dead-letters/replay/${randomUUID()}`, ADMIN],
  ])('answers %i to %s, starting nothing', async (status, _name, method, path, headers) => {
    const before = (await direct.query<{ n: number }>('SELECT count(*)::int AS n FROM dead_letter_replay_run')).rows[0].n;

    const response = await call<{ statusCode: number; error: string }>(method, path, headers);

    expect(response.status).toBe(status);
    expect(response.body.statusCode).toBe(status);
    expect((await direct.query<{ n: number }>('SELECT count(*)::int AS n FROM dead_letter_replay_run')).rows[0].n).toBe(before);
  });
});
