import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Pool } from 'pg';
import { AckSpool } from '../src/receive/ack-spool';
import { createTestDatabase, TestDatabase } from './support/database';
import { deliver, postEvent } from './support/pozy-events';
import { RunningService, startService, waitFor } from './support/service';
import { TcpProxy } from './support/tcp-proxy';
import { DEFAULT_WORKSPACE } from '../src/common/workspace-id';

const ADMIN = { authorization: 'Bearer spool-admin-token' };

describe('the acknowledgment spool: PostgreSQL unreachable for the receiver', () => {
  let db: TestDatabase;
  let proxy: TcpProxy;
  let service: RunningService;
  /** Straight to PostgreSQL, around the proxy: what is really stored. */
  let direct: Pool;
  const stored = async (ids: string[]) =>
    (await direct.query<{ id: string }>('SELECT id FROM pozy_event WHERE id = ANY($1)', [ids])).rows.map((r) => r.id).sort();
  const spool = () => service.app.get(AckSpool);

  beforeAll(async () => {
    db = await createTestDatabase('spool');
    const url = new URL(db.url);
    proxy = await TcpProxy.start({ host: url.hostname, port: Number(url.port || 5432) });
    direct = db.pool(2);
    // Shortened for the test: acknowledgment 500 ms (2 s), retries after 300 ms (10 s) then 3 s (20 min),
    // dead-lettered once timeouts have lasted over 2.5 s (60 s): the first retry's failure, about 0.8 s after the
    // spool, is well inside that on a slow machine, and the second's, about 4.3 s after, past it.
    service = await startService(proxy.url(db.url), {
      ROLE: 'api',
      ADMIN_TOKEN: 'spool-admin-token',
      ACK_TIMEOUT_MS: '500',
      SPOOL_RETRY_FIRST_MS: '300',
      SPOOL_RETRY_SECOND_MS: '3000',
      DEAD_LETTER_AFTER_MS: '2500',
    });
  });

  afterAll(async () => {
    await service?.close();
    await proxy?.stop();
    await direct?.end();
    await db?.drop();
  });

  afterEach(() => proxy.set('pass'));

  const finishedReplay = (runId: string) =>
    waitFor(`replay ${runId} to finish`, async () => {
      const run = (await (await fetch(`${service.baseUrl}/admin/dead-letters/replay/${runId}`, { headers: ADMIN })).json()) as { status: string };
      return run.status === 'running' ? undefined : run;
    });

  it('answers 2xx within 5 s while the database is cut, then stores every event once after the 10 s retry', async () => {
    proxy.set('blackhole');
    const events = Array.from({ length: 10 }, (_, i) => postEvent(`66aa01f3c2b1e4d5f6a7${String(i).padStart(4, '0')}`));
    const started = Date.now();

    // One of them twice, as Pozy may while we look slow.
    const answers = await Promise.all([...events, events[0]].map((event) => deliver(service.baseUrl, event)));

    expect(Date.now() - started).toBeLessThan(5_000);
    expect(answers.map((a) => [a.status, a.body.spooled])).toEqual(Array(11).fill([200, true]));
    expect(spool().counts()).toEqual({ pending: 10, dead: 0 });
    expect(await stored(events.map((e) => e.id))).toEqual([]);

    proxy.set('pass');
    await waitFor('the spool to drain', async () => (spool().counts().pending === 0 ? true : undefined));

    expect(await stored(events.map((e) => e.id))).toEqual(events.map((e) => e.id).sort());
    const { rows } = await direct.query('SELECT count(*)::int AS n FROM reconcile_request WHERE key LIKE $1', ['post:66aa01f3c2b1e4d5f6a7%']);
    expect(rows[0].n).toBe(10);
  });

  it('moves events to the acknowledgment dead-letter queue after over 60 s (here 2.5 s) of timeouts; a replay stores each once', async () => {
    proxy.set('blackhole');
    const events = Array.from({ length: 3 }, () => postEvent('66aa01f3c2b1e4d5f6a7ffff'));
    for (const event of events) expect((await deliver(service.baseUrl, event)).body.spooled).toBe(true);

    await waitFor('the records to be dead-lettered', async () => (spool().counts().dead === 3 ? true : undefined), 15_000);
    const list = await fetch(`${service.baseUrl}/admin/dead-letters?queue=ack`, { headers: ADMIN });
    const { data } = (await list.json()) as { data: Array<{ eventId: string; attempts: number; lastError: string; firstTimeoutAt: string }> };
    expect(data.map((l) => l.eventId).sort()).toEqual(events.map((e) => e.id).sort());
    expect(data.every((l) => l.attempts === 2 && /acknowledge|timeout/i.test(l.lastError))).toBe(true);

    const tooSoon = await fetch(`${service.baseUrl}/admin/dead-letters/replay?queue=ack`, { method: 'POST', headers: ADMIN });
    expect(tooSoon.status).toBe(503);
    expect(spool().counts().dead).toBe(3);

    proxy.set('pass');
    const dry = await fetch(`${service.baseUrl}/admin/dead-letters/replay?queue=ack&dryRun=true`, { method: 'POST', headers: ADMIN });
    expect(await dry.json()).toEqual({ queue: 'ack', count: 3, replayed: false });
    const replay = await fetch(`${service.baseUrl}/admin/dead-letters/replay?queue=ack`, { method: 'POST', headers: ADMIN });
    const { runId } = (await replay.json()) as { runId: string };
    expect(await finishedReplay(runId)).toMatchObject({ queue: 'ack', status: 'succeeded', total: 3, replayed: 3, skipped: 0 });

    expect(await stored(events.map((e) => e.id))).toEqual(events.map((e) => e.id).sort());
    expect(spool().counts()).toEqual({ pending: 0, dead: 0 });
    const again = await fetch(`${service.baseUrl}/admin/dead-letters/replay?queue=ack`, { method: 'POST', headers: ADMIN });
    const second = (await again.json()) as { runId: string; count: number };
    expect(second.count).toBe(0);
    expect(await finishedReplay(second.runId)).toMatchObject({ status: 'succeeded', total: 0, replayed: 0 });
  });

  it('drains at start-up what a service that stopped during an outage left in its spool', async () => {
    const spoolDir = mkdtempSync(join(tmpdir(), 'pozy-spool-drain-'));
    const env = { ROLE: 'api', ACK_TIMEOUT_MS: '500', SPOOL_RETRY_FIRST_MS: '60000', SPOOL_DIR: spoolDir };
    const events = Array.from({ length: 4 }, () => postEvent('66aa01f3c2b1e4d5f6a7dddd'));
    const before = await startService(proxy.url(db.url), env);
    proxy.set('blackhole');
    for (const event of events) expect((await deliver(before.baseUrl, event)).body.spooled).toBe(true);
    await before.close();
    proxy.set('pass');
    expect(await stored(events.map((e) => e.id))).toEqual([]);

    // The next start does not wait for the (here 60 s) retry: it drains first.
    const after = await startService(proxy.url(db.url), env);
    try {
      await waitFor('the spool to drain at start-up', async () =>
        (await stored(events.map((e) => e.id))).length === events.length ? true : undefined,
      );
      expect(after.app.get(AckSpool).counts()).toEqual({ pending: 0, dead: 0 });
    } finally {
      await after.close();
    }
  });

  it('sets aside a spooled event PostgreSQL refuses, without holding back the ones spooled with it', async () => {
    const good = postEvent('66aa01f3c2b1e4d5f6a7cccc');
    const bad = postEvent('66aa01f3c2b1e4d5f6a7cccd');
    const spooledEvent = (event: typeof good, payloadJson: string) => ({
      workspaceId: DEFAULT_WORKSPACE,
      id: event.id,
      type: event.event,
      payloadJson,
      timestamp: new Date(event.timestamp),
      deliveryId: null,
      attempt: 1,
      test: false,
      reconcile: null,
      recoveredBy: null,
      traceParent: null,
    });
    // As if a batch holding both had timed out: jsonb refuses \u0000, so the bad one can never be stored.
    spool().add(
      [spooledEvent(good, JSON.stringify(good)), spooledEvent(bad, JSON.stringify({ ...bad, note: 'NUL' }).replace('NUL', '\\u0000'))],
      new Error('the database did not acknowledge within 500 ms'),
    );

    // The two are retried one after the other: wait for both outcomes, not just the first.
    await waitFor('the good event stored and the bad one set aside', async () =>
      (await stored([good.id])).length === 1 && spool().counts().dead === 1 ? true : undefined,
    );
    expect(spool().counts()).toEqual({ pending: 0, dead: 1 });
    const letters = (await (await fetch(`${service.baseUrl}/admin/dead-letters?queue=ack`, { headers: ADMIN })).json()) as {
      data: Array<{ id: string; eventId: string; lastError: string }>;
    };
    const letter = letters.data.find((l) => l.eventId === bad.id)!;
    expect(letter.lastError).toMatch(/refused by PostgreSQL/);
    const replay = await fetch(`${service.baseUrl}/admin/dead-letters/${letter.id}/replay`, { method: 'POST', headers: ADMIN });
    expect(replay.status).toBe(422);
    expect(await replay.json()).toMatchObject({
      statusCode: 422,
      error: 'unstorable_event',
      message: expect.stringMatching(/^PostgreSQL refuses this event/),
    });
    expect(await stored([bad.id])).toEqual([]);
  });

  it('retries an insert that did commit without storing anything twice', async () => {
    const event = postEvent('66aa01f3c2b1e4d5f6a7eeee');
    expect((await deliver(service.baseUrl, event)).body).toMatchObject({ duplicate: false });
    // The database committed but its acknowledgment was lost: the event is spooled as well.
    spool().add(
      [
        {
          workspaceId: DEFAULT_WORKSPACE,
          id: event.id,
          type: event.event,
          payloadJson: JSON.stringify(event),
          timestamp: new Date(event.timestamp),
          deliveryId: null,
          attempt: 1,
          test: false,
          reconcile: null,
          recoveredBy: null,
          traceParent: null,
        },
      ],
      new Error('the database did not acknowledge within 500 ms'),
    );

    await waitFor('the spool to drain', async () => (spool().counts().pending === 0 ? true : undefined));

    const { rows } = await direct.query('SELECT count(*)::int AS n FROM pozy_event WHERE id = $1', [event.id]);
    expect(rows[0].n).toBe(1);
  });
});

describe('ACK_TIMEOUT_MS above three seconds', () => {
  let db: TestDatabase;
  let service: RunningService;
  let direct: Pool;

  beforeAll(async () => {
    db = await createTestDatabase('spool_ack_timeout');
    direct = db.pool(2);
    service = await startService(db.url, { ROLE: 'api', ACK_TIMEOUT_MS: '4500' });
  });

  afterAll(async () => {
    await service?.close();
    await direct?.end();
    await db?.drop();
  });

  it('waits that long for the database before spooling: an insert slowed 3.5 s is stored, not spooled', async () => {
    const locker = await direct.connect();
    try {
      // The event's own statement writes its read request; holding that table stalls it, as a busy database would.
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE reconcile_request IN EXCLUSIVE MODE');
      const event = postEvent('66aa01f3c2b1e4d5f6a7abcd');
      const started = Date.now();
      const answer = deliver(service.baseUrl, event);
      await waitFor('the insert to wait on the lock', async () => {
        // Kysely writes its statements in lower case, with quoted identifiers.
        const { rows } = await direct.query(
          "SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query ILIKE '%insert into%pozy_event%'",
        );
        return rows.length > 0 ? true : undefined;
      });
      // Held past the three seconds the insert used to give up at, well inside the 4.5 s configured.
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, 3_500 - (Date.now() - started))));
      await locker.query('COMMIT');

      const { status, body } = await answer;
      expect(status).toBe(200);
      expect(body).toMatchObject({ received: true, duplicate: false });
      expect(body).not.toHaveProperty('spooled');
      expect(service.app.get(AckSpool).counts()).toEqual({ pending: 0, dead: 0 });
      const { rows } = await direct.query('SELECT id FROM pozy_event WHERE id = $1', [event.id]);
      expect(rows).toEqual([{ id: event.id }]);
    } finally {
      await locker.query('ROLLBACK').catch(() => undefined);
      locker.release();
    }
  });
});
