import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { BackfillRunRepository } from '../src/backfill/backfill-run.repository';
import { LockKey } from '../src/database/advisory-lock';
import { PruneCounts } from '../src/retention/retention.service';
import { PozyEventRepository } from '../src/receive/pozy-event.repository';
import { deliver, postEvent } from './support/pozy-events';
import { RunningService } from './support/service';
import { ServiceSpec, startSpec } from './support/spec';
import { DEFAULT_WORKSPACE } from '../src/common/workspace-id';

const ADMIN_TOKEN = 'retention-admin-token';
const auth = { authorization: `Bearer ${ADMIN_TOKEN}` };
const none: PruneCounts = {
  events: 0,
  notificationAttempts: 0,
  notifications: 0,
  backfillRuns: 0,
  replayRuns: 0,
  deadLetters: 0,
  failedJobs: 0,
  reads: 0,
  opsEvents: 0,
  changes: 0,
  versions: 0,
};

describe('retention (POST /admin/retention, real PostgreSQL)', () => {
  let spec: ServiceSpec;
  let service: RunningService;

  beforeAll(async () => {
    // api only: no worker sends the inserted notifications or reconciles the events while a test looks at them.
    spec = await startSpec('retention', {
      env: {
        ROLE: 'api',
        ADMIN_TOKEN,
        RETENTION_CRON: 'off',
        EVENT_RETENTION_DAYS: '7',
        RETENTION_BATCH_SIZE: '10',
      },
    });
    service = spec.service;
  });

  afterAll(async () => {
    await spec?.close();
  });

  beforeEach(async () => {
    await service.pool.query(
      'TRUNCATE pozy_event, reconcile_request, notification_attempt, notification, subscription, backfill_run, dead_letter, dead_letter_replay_run',
    );
    await service.pool.query('DELETE FROM graphile_worker._private_jobs');
  });

  const prune = async () => {
    const response = await fetch(`${service.baseUrl}/admin/retention`, { method: 'POST', headers: auth });
    return { status: response.status, body: (await response.json()) as { cutoff: string; deleted: PruneCounts; error?: string } };
  };
  const ids = async (sql: string) => (await service.pool.query<{ id: string }>(sql)).rows.map((r) => String(r.id)).sort();
  /** Delivers `count` events through the webhook; answers their ids. */
  const receive = async (count: number, label: string) => {
    const events = Array.from({ length: count }, (_, i) => postEvent(`${label}-${i}`));
    const answers = await Promise.all(events.map((event) => deliver(service.baseUrl, event)));
    expect(answers.map((a) => a.body.duplicate)).toEqual(Array(count).fill(false));
    return events.map((e) => e.id);
  };
  const backdate = (eventIds: string[], age: string) =>
    service.pool.query(`UPDATE pozy_event SET received_at = now() - $2::interval WHERE id = ANY($1::text[])`, [eventIds, age]);

  it('answers 401 without the admin token, and deletes nothing', async () => {
    const [old] = await receive(1, 'post-unauthorised');
    await backdate([old], '8 days');

    const response = await fetch(`${service.baseUrl}/admin/retention`, { method: 'POST' });

    expect(response.status).toBe(401);
    expect(await response.json()).toMatchObject({ error: 'missing_token' });
    expect(await ids('SELECT id FROM pozy_event')).toEqual([old]);
  });

  it('deletes 35 events older than the window in batches of RETENTION_BATCH_SIZE, and keeps the recent ones', async () => {
    const old = await receive(35, 'post-old');
    const recent = await receive(3, 'post-recent');
    await backdate(old, '8 days');
    await backdate([recent[0]], '6 days 23 hours');
    // Each call is one DELETE statement of pozy_event's owner.
    const statements = jest.spyOn(service.app.get(PozyEventRepository), 'pruneBefore');

    try {
      const { status, body } = await prune();
      expect(status).toBe(200);
      expect(body.deleted).toEqual({ ...none, events: 35 });
      // 10 + 10 + 10 + 5: the statement that deletes fewer than a batch is the last.
      expect(statements).toHaveBeenCalledTimes(4);
      expect(await Promise.all(statements.mock.results.map((r) => r.value as Promise<number>))).toEqual([10, 10, 10, 5]);
    } finally {
      statements.mockRestore();
    }
    expect(await ids('SELECT id FROM pozy_event')).toEqual([...recent].sort());
  });

  it('keeps deduplicating inside the window; an event pruned is accepted again as new (the trade-off)', async () => {
    const [inWindow, pruned] = [postEvent('post-6-days'), postEvent('post-8-days')];
    for (const event of [inWindow, pruned]) expect((await deliver(service.baseUrl, event)).body.duplicate).toBe(false);
    await backdate([inWindow.id], '6 days');
    await backdate([pruned.id], '8 days');
    expect((await prune()).body.deleted.events).toBe(1);
    const stored = async () =>
      (await service.pool.query<{ id: string; received_at: Date }>('SELECT id, received_at FROM pozy_event ORDER BY id')).rows;
    const before = await stored();

    const again = await deliver(service.baseUrl, inWindow, { headers: { 'x-pozy-attempt': '2' } });

    expect(again).toEqual({ status: 200, body: { received: true, workspaceId: 'default', eventId: inWindow.id, duplicate: true, reconcile: null } });
    expect(await stored()).toEqual(before);

    const late = await deliver(service.baseUrl, pruned, { headers: { 'x-pozy-attempt': '5' } });

    expect(late).toMatchObject({ status: 200, body: { eventId: pruned.id, duplicate: false } });
    expect((await stored()).map((r) => r.id).sort()).toEqual([inWindow.id, pruned.id].sort());
  });

  it('prunes old notification history, backfill runs, replayed dead letters and failed jobs, and keeps what is still needed', async () => {
    const subscription = randomUUID();
    await service.pool.query(
      `INSERT INTO subscription (id, url, secret, event_types, active) VALUES ($1, 'http://127.0.0.1:9/hook', 'whsec_x', '{post.changed}', false)`,
      [subscription],
    );
    const notification = (
      id: string,
      state: string,
      createdDays: number,
      options: { deliveredDays?: number; resource?: string; sequence?: number } = {},
    ) =>
      service.pool.query(
        `INSERT INTO notification (workspace_id, id, subscription_id, type, resource_key, sequence, data, created_at, state, next_attempt_at, delivered_at)
         VALUES ('default', $1, $2, 'post.changed', $3, $4, '{}', now() - $5 * interval '1 day', $6,
                 CASE WHEN $6 = 'pending' THEN now() END, now() - $7 * interval '1 day')`,
        [id, subscription, options.resource ?? `post:${id}`, options.sequence ?? 1, createdDays, state, options.deliveredDays ?? null],
      );
    const attempt = async (notificationId: string, days: number) =>
      (
        await service.pool.query<{ id: string }>(
          `INSERT INTO notification_attempt (notification_id, subscription_id, attempted_at, duration_ms, status_code, outcome)
           VALUES ($1, $2, now() - $3 * interval '1 day', 12, 200, 'delivered') RETURNING id`,
          [notificationId, subscription, days],
        )
      ).rows[0].id;

    await notification('msg_old_delivered', 'delivered', 10, { deliveredDays: 10 });
    await notification('msg_old_superseded', 'superseded', 9);
    await notification('msg_old_cancelled', 'cancelled', 8);
    await notification('msg_old_pending', 'pending', 30);
    await notification('msg_old_dead', 'dead', 30, { resource: 'post:guarded', sequence: 1 });
    // Deleting it would let the older dead one above be replayed after it.
    await notification('msg_old_newer_than_dead', 'delivered', 20, { deliveredDays: 20, resource: 'post:guarded', sequence: 2 });
    // Replayed, and delivered again, yesterday.
    await notification('msg_old_redelivered', 'delivered', 12, { deliveredDays: 1 });
    await notification('msg_recent', 'delivered', 1, { deliveredDays: 1 });
    const oldAttempts = [
      await attempt('msg_old_pending', 8),
      await attempt('msg_old_dead', 20),
      await attempt('msg_old_redelivered', 12),
      await attempt('msg_old_delivered', 10),
    ];
    // Recent, but its notification is pruned: it goes with it.
    const cascaded = await attempt('msg_old_superseded', 2);
    const keptAttempts = [await attempt('msg_old_redelivered', 1), await attempt('msg_recent', 1), await attempt('msg_old_pending', 2)];

    const run = (status: string, finishedDays: number | null, newestLogDays: number | null) => {
      const id = randomUUID();
      return service.pool
        .query(
          `INSERT INTO backfill_run (workspace_id, id, trigger, status, started_at, finished_at, newest_log_at)
           VALUES ('default', $1, 'schedule', $2, now() - (coalesce($3, 10) + 0.01) * interval '1 day',
                   now() - $3 * interval '1 day', now() - $4 * interval '1 day')`,
          [id, status, finishedDays, newestLogDays],
        )
        .then(() => id);
    };
    // The checkpoint is the succeeded run with the newest log row, not the last one to succeed (it saw no log row).
    const checkpointRun = await run('succeeded', 20, 20);
    const oldRuns = [await run('succeeded', 25, 25), await run('failed', 9, 9), await run('succeeded', 8, null)];
    const keptRuns = [checkpointRun, await run('running', null, 10), await run('failed', 1, 1)];
    const checkpoint = await service.app.get(BackfillRunRepository).checkpoint(DEFAULT_WORKSPACE);
    expect(checkpoint).not.toBeNull();

    const replayRun = async (status: string, startedDays: number) =>
      (
        await service.pool.query<{ id: string }>(
          `INSERT INTO dead_letter_replay_run (id, queue, status, host, started_at, finished_at)
           VALUES (gen_random_uuid(), 'delivery', $1, 'replica-a', now() - $2 * interval '1 day',
                   CASE WHEN $1 <> 'running' THEN now() - $2 * interval '1 day' END)
           RETURNING id`,
          [status, startedDays],
        )
      ).rows[0].id;
    const oldReplayRuns = [await replayRun('succeeded', 9), await replayRun('interrupted', 20)];
    // A run is never pruned while it runs, however long ago it started; a recent one is kept.
    const keptReplayRuns = [await replayRun('running', 9), await replayRun('failed', 1)];

    const letter = async (createdDays: number, replayedDays: number | null) =>
      (
        await service.pool.query<{ id: string }>(
          `INSERT INTO dead_letter (workspace_id, id, queue, kind, resource_key, payload, reason, error, attempts, first_failure_at, last_failure_at, created_at, replayed_at)
           VALUES ('default', gen_random_uuid(), 'delivery', 'reconcile', 'post:x', '{}', 'timeout', 'timed out', 5,
                   now() - $1 * interval '1 day', now() - $1 * interval '1 day', now() - $1 * interval '1 day', now() - $2 * interval '1 day')
           RETURNING id`,
          [createdDays, replayedDays],
        )
      ).rows[0].id;
    const oldLetters = [await letter(20, 8)];
    const keptLetters = [await letter(30, null), await letter(20, 1)];

    const job = async (key: string, spec: { failed: boolean; updatedDays: number; runAtDays: number; locked?: boolean }) => {
      await service.pool.query(`SELECT graphile_worker.add_job('reconcile', '{}'::json, job_key := $1)`, [key]);
      await service.pool.query(
        `UPDATE graphile_worker._private_jobs
            SET attempts = CASE WHEN $2 THEN max_attempts ELSE 3 END, last_error = 'Pozy answered 400',
                updated_at = now() - $3 * interval '1 day', run_at = now() - $4 * interval '1 day',
                locked_at = CASE WHEN $5 THEN now() END, locked_by = CASE WHEN $5 THEN 'pool-x' END
          WHERE key = $1`,
        [key, spec.failed, spec.updatedDays, spec.runAtDays, spec.locked ?? false],
      );
    };
    await job('post:failed-long-ago', { failed: true, updatedDays: 12, runAtDays: 8 });
    await job('post:failed-yesterday', { failed: true, updatedDays: 12, runAtDays: 1 });
    await job('post:still-retrying', { failed: false, updatedDays: 12, runAtDays: 8 });
    await job('post:locked', { failed: true, updatedDays: 12, runAtDays: 8, locked: true });

    const { status, body } = await prune();

    expect(status).toBe(200);
    expect(body.deleted).toEqual({
      ...none,
      notificationAttempts: 4,
      notifications: 3,
      backfillRuns: 3,
      replayRuns: 2,
      deadLetters: 1,
      failedJobs: 1,
    });
    expect(Date.now() - new Date(body.cutoff).getTime()).toBeGreaterThanOrEqual(7 * 86_400_000);
    expect(await ids('SELECT id FROM notification')).toEqual(
      ['msg_old_pending', 'msg_old_dead', 'msg_old_newer_than_dead', 'msg_old_redelivered', 'msg_recent'].sort(),
    );
    const attempts = await ids('SELECT id FROM notification_attempt');
    const runs = await ids('SELECT id FROM backfill_run');
    const letters = await ids('SELECT id FROM dead_letter');
    expect(await ids('SELECT id FROM dead_letter_replay_run')).toEqual([...keptReplayRuns].sort());
    expect(attempts).toEqual([...keptAttempts].sort());
    expect(runs).toEqual([...keptRuns].sort());
    expect(letters).toEqual([...keptLetters].sort());
    const gone = new Set([...oldAttempts, cascaded, ...oldRuns, ...oldLetters, ...oldReplayRuns]);
    expect([...attempts, ...runs, ...letters].filter((id) => gone.has(id))).toEqual([]);
    expect(await service.app.get(BackfillRunRepository).checkpoint(DEFAULT_WORKSPACE)).toEqual(checkpoint);
    expect(await ids('SELECT key AS id FROM graphile_worker._private_jobs')).toEqual(
      ['post:failed-yesterday', 'post:still-retrying', 'post:locked'].sort(),
    );

    // Nothing left to prune: a second run deletes nothing.
    expect((await prune()).body.deleted).toEqual(none);
  });

  it('answers 409 while a prune holds the lock on another replica', async () => {
    const other = new Client({ connectionString: spec.db.url });
    await other.connect();
    try {
      await other.query('SELECT pg_advisory_lock($1)', [LockKey.Retention]);
      const { status, body } = await prune();
      expect(status).toBe(409);
      expect(body.error).toBe('retention_running');
    } finally {
      await other.end();
    }
    expect((await prune()).status).toBe(200);
  });
});
