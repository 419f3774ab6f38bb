import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Logger } from '@nestjs/common';
import Database from 'better-sqlite3';
import type { AppConfig } from '../config/app-config';
import type { PrimaryChange, PrimaryWatch } from '../database/primary-watch';
import { AckSpool } from './ack-spool';
import { type BatchOutcome, eventKey, type NewPozyEvent, type PozyEventRepository } from './pozy-event.repository';
import { ReconcileSignal } from './reconcile-signal';
import { DEFAULT_WORKSPACE } from '../common/workspace-id';

const FIRST_RETRY_MS = 10_000;
const NEXT_RETRIES_MS = 20 * 60_000;
const DEAD_LETTER_AFTER_MS = 60_000;

const timeout = () => new Error('Query read timeout');
const refused = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });

function event(id: string): NewPozyEvent {
  return {
    workspaceId: DEFAULT_WORKSPACE,
    id,
    type: 'post.published',
    payloadJson: `{"id":"${id}"}`,
    timestamp: new Date('2026-11-30T11:59:00Z'),
    deliveryId: 'd-1',
    attempt: 1,
    test: false,
    reconcile: { key: `post:p-${id}`, type: 'post', id: `p-${id}` },
    recoveredBy: null,
    traceParent: null,
  };
}

/**
 * The spool in a directory of its own, over the receive statement as an in-process fake: `failWith` makes the
 * statement fail (the database still down), and every attempt is recorded with its time.
 */
function setup(spoolDir?: (root: string) => string) {
  const root = mkdtempSync(join(tmpdir(), 'pozy-sync-spool-'));
  const dir = spoolDir ? spoolDir(root) : root;
  const database = {
    stored: new Set<string>(),
    attempts: [] as { at: number; ids: string[] }[],
    failWith: null as (() => Error) | null,
    async insertBatch(events: readonly NewPozyEvent[]): Promise<BatchOutcome> {
      database.attempts.push({ at: Date.now(), ids: events.map((e) => e.id) });
      if (database.failWith) throw database.failWith();
      const fresh = events.filter((e) => !database.stored.has(e.id));
      for (const e of fresh) database.stored.add(e.id);
      return { inserted: new Set(fresh.map(eventKey)), firstRequestDueAt: null };
    },
  };
  const config = {
    spoolDir: dir,
    spoolRetryFirstMs: FIRST_RETRY_MS,
    spoolRetrySecondMs: NEXT_RETRIES_MS,
    deadLetterAfterMs: DEAD_LETTER_AFTER_MS,
    ackTimeoutMs: 2_000,
    reconcileCoalesceWindowMs: 1_000,
  } as AppConfig;
  /** PrimaryWatch as the spool sees it: `writableAgain()` is a writable primary found after an outage. */
  const primary = {
    listeners: [] as Array<(change: PrimaryChange) => void>,
    onWritable(listener: (change: PrimaryChange) => void) {
      primary.listeners.push(listener);
    },
    wake() {},
    writableAgain() {
      const server = { address: '10.0.0.2:5432', startedAt: '2026-11-30 12:00:00+00' };
      for (const listener of primary.listeners) listener({ kind: 'failover', at: new Date(), from: null, to: server, withoutPrimaryMs: 5_000 });
    },
  };
  const watch = primary as unknown as PrimaryWatch;
  const open = () => {
    const spool = new AckSpool(config, database as unknown as PozyEventRepository, new ReconcileSignal(), watch);
    spool.onModuleInit();
    spool.onApplicationBootstrap();
    return spool;
  };
  const close = async (spool: AckSpool) => {
    await spool.beforeApplicationShutdown();
    spool.onApplicationShutdown();
  };
  return { dir, config, database, primary, watch, open, close, remove: () => rmSync(root, { recursive: true, force: true }) };
}

const advance = (ms: number) => jest.advanceTimersByTimeAsync(ms);

/** Polls `done` (real timers) until it holds, failing past the deadline. */
async function waitUntil(done: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`not done within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('AckSpool: when a spooled event is retried, and when it is given up on', () => {
  let s: ReturnType<typeof setup>;
  let spool: AckSpool;
  let t0: number;

  beforeAll(() => {
    Logger.overrideLogger(false);
  });

  beforeEach(() => {
    jest.useFakeTimers({ now: new Date('2026-11-30T12:00:00Z') });
    t0 = Date.now();
    s = setup();
    spool = s.open();
  });

  afterEach(async () => {
    await s.close(spool);
    jest.useRealTimers();
    s.remove();
  });

  const attemptTimes = () => s.database.attempts.map((a) => a.at - t0);

  it('retries a spooled event SPOOL_RETRY_FIRST_MS after it was spooled, and stores it once', async () => {
    spool.add([event('a'), event('b')], timeout());
    expect(spool.counts()).toEqual({ pending: 2, dead: 0 });

    await advance(FIRST_RETRY_MS - 1);
    expect(s.database.attempts).toEqual([]);
    await advance(1);

    expect(s.database.attempts).toEqual([{ at: t0 + FIRST_RETRY_MS, ids: ['a', 'b'] }]);
    expect([...s.database.stored]).toEqual(['a', 'b']);
    expect(spool.counts()).toEqual({ pending: 0, dead: 0 });
  });

  it('keeps a second copy of an event already spooled out', async () => {
    spool.add([event('a')], timeout());
    spool.add([event('a')], timeout());

    expect(spool.counts()).toEqual({ pending: 1, dead: 0 });
  });

  it("keeps two workspaces' events of one id apart, each retried with its workspace", async () => {
    spool.add([event('a'), { ...event('a'), workspaceId: 'acme' }], timeout());
    expect(spool.counts()).toEqual({ pending: 2, dead: 0 });

    const sent: string[] = [];
    const insertBatch = s.database.insertBatch;
    s.database.insertBatch = (events) => {
      sent.push(...events.map(eventKey));
      return insertBatch(events);
    };
    await advance(FIRST_RETRY_MS);

    expect(sent.sort()).toEqual(['acme/a', 'default/a']);
    expect(spool.counts()).toEqual({ pending: 0, dead: 0 });
  });

  it('retries every SPOOL_RETRY_SECOND_MS after that while the database keeps failing', async () => {
    s.database.failWith = refused;
    spool.add([event('a')], refused());

    await advance(FIRST_RETRY_MS + 3 * NEXT_RETRIES_MS);

    expect(attemptTimes()).toEqual([
      FIRST_RETRY_MS,
      FIRST_RETRY_MS + NEXT_RETRIES_MS,
      FIRST_RETRY_MS + 2 * NEXT_RETRIES_MS,
      FIRST_RETRY_MS + 3 * NEXT_RETRIES_MS,
    ]);
    // Refused connections are not timeouts: the event is never given up on.
    expect(spool.counts()).toEqual({ pending: 1, dead: 0 });
  });

  it('drains everything pending at once, in the order it was spooled, when a writable primary is found again', async () => {
    s.database.failWith = refused;
    spool.add([event('a'), event('b')], refused());
    await advance(1_000);
    spool.add([event('c')], refused());
    await advance(FIRST_RETRY_MS);
    // The first retries failed: the next would be SPOOL_RETRY_SECOND_MS away.
    expect(s.database.attempts.length).toBeGreaterThan(0);
    const before = s.database.attempts.length;

    s.database.failWith = null;
    s.primary.writableAgain();
    await advance(0);

    expect(s.database.attempts.slice(before).flatMap((a) => a.ids)).toEqual(['a', 'b', 'c']);
    expect([...s.database.stored]).toEqual(['a', 'b', 'c']);
    expect(spool.counts()).toEqual({ pending: 0, dead: 0 });
  });

  it('moves an event to the acknowledgment dead-letter queue once its timeouts have lasted over DEAD_LETTER_AFTER_MS', async () => {
    s.database.failWith = timeout;
    spool.add([event('a')], timeout());

    // At 10 s the timeouts have lasted 10 s: retried again later.
    await advance(FIRST_RETRY_MS);
    expect(spool.counts()).toEqual({ pending: 1, dead: 0 });

    // At 20 min 10 s they have lasted well over 60 s: given up on, and not retried any more.
    await advance(NEXT_RETRIES_MS);
    expect(spool.counts()).toEqual({ pending: 0, dead: 1 });
    expect(spool.dead(10)).toEqual([
      expect.objectContaining({ eventId: 'a', eventType: 'post.published', attempts: 2, state: 'dead', firstTimeoutAt: new Date(t0) }),
    ]);
    await advance(5 * NEXT_RETRIES_MS);
    expect(attemptTimes()).toEqual([FIRST_RETRY_MS, FIRST_RETRY_MS + NEXT_RETRIES_MS]);
  });

  it('sets aside at once an event PostgreSQL refuses, and stores the ones spooled with it', async () => {
    spool.add([event('a'), event('bad'), event('c')], timeout());
    s.database.failWith = null;
    const insert = s.database.insertBatch.bind(s.database);
    s.database.insertBatch = async (events) => {
      if (events.some((e) => e.id === 'bad')) {
        s.database.attempts.push({ at: Date.now(), ids: events.map((e) => e.id) });
        throw Object.assign(new Error('unsupported Unicode escape sequence'), { code: '22P05' });
      }
      return insert(events);
    };

    await advance(FIRST_RETRY_MS);

    expect([...s.database.stored].sort()).toEqual(['a', 'c']);
    expect(spool.counts()).toEqual({ pending: 0, dead: 1 });
    expect(spool.dead(10)).toEqual([expect.objectContaining({ eventId: 'bad', lastError: expect.stringContaining('refused by PostgreSQL') })]);
  });

  it('replays a dead letter with the same insert: stored once, and gone from the queue', async () => {
    s.database.failWith = timeout;
    spool.add([event('a')], timeout());
    await advance(FIRST_RETRY_MS + NEXT_RETRIES_MS);
    const [letter] = spool.dead(10);

    s.database.failWith = null;
    await expect(spool.replay([letter.id])).resolves.toEqual({ stored: 1, duplicates: 0 });

    expect([...s.database.stored]).toEqual(['a']);
    expect(spool.counts()).toEqual({ pending: 0, dead: 0 });
  });

  it('drains at start-up, at once, what an earlier run left pending', async () => {
    s.database.failWith = refused;
    spool.add([event('a')], refused());
    await s.close(spool);

    s.database.failWith = null;
    spool = s.open();
    await advance(0);

    expect(attemptTimes()).toEqual([0]);
    expect([...s.database.stored]).toEqual(['a']);
  });
});

describe('AckSpool: a spool of a version before workspaces', () => {
  beforeAll(() => {
    Logger.overrideLogger(false);
  });

  it('is upgraded at start, keeping what it held as the default workspace’s, which it then retries', async () => {
    const s = setup();
    // The table as that version created it, holding one event it had spooled.
    const old = new Database(join(s.dir, 'spool.sqlite'));
    old.exec(`CREATE TABLE spooled (
      id TEXT PRIMARY KEY, event_id TEXT NOT NULL UNIQUE, event TEXT NOT NULL, spooled_at INTEGER NOT NULL,
      attempts INTEGER NOT NULL DEFAULT 0, next_attempt_at INTEGER, first_timeout_at INTEGER, last_error TEXT NOT NULL,
      state TEXT NOT NULL DEFAULT 'pending', dead_at INTEGER)`);
    const { workspaceId: _none, ...before } = event('old');
    old
      .prepare(`INSERT INTO spooled (id, event_id, event, spooled_at, next_attempt_at, last_error) VALUES (?, ?, ?, ?, ?, ?)`)
      .run('00000000-0000-4000-8000-000000000001', 'old', JSON.stringify(before), Date.now(), Date.now(), 'timeout');
    old.close();
    const sent: string[] = [];
    const insertBatch = s.database.insertBatch;
    s.database.insertBatch = (events) => {
      sent.push(...events.map(eventKey));
      return insertBatch(events);
    };

    const spool = s.open();
    try {
      // Drained at start: the event, as the default workspace's.
      await waitUntil(() => spool.counts().pending === 0);
      expect(sent).toEqual(['default/old']);
      spool.add([event('again'), { ...event('again'), workspaceId: 'acme' }], timeout());
      expect(spool.counts()).toEqual({ pending: 2, dead: 0 });
    } finally {
      await s.close(spool);
      s.remove();
    }
  });
});

describe('AckSpool: its directory and files are private (0700, 0600) under a umask of 022', () => {
  const FILES = ['spool.sqlite', 'spool.sqlite-wal', 'spool.sqlite-shm'];
  let umask: number;
  let warnings: string[];
  let s: ReturnType<typeof setup>;

  /** The permission bits of the spool directory and of each of its files, as `ls -l` would show them. */
  const modes = () =>
    Object.fromEntries(
      [['dir', s.dir], ...FILES.map((file) => [file, join(s.dir, file)])].map(([name, path]) => [name, (statSync(path).mode & 0o777).toString(8)]),
    );

  beforeEach(() => {
    umask = process.umask(0o022);
    warnings = [];
    jest.spyOn(Logger.prototype, 'warn').mockImplementation((message: unknown) => void warnings.push(String(message)));
  });

  afterEach(() => {
    process.umask(umask);
    jest.restoreAllMocks();
    s.remove();
  });

  it('creates a new spool private, its -wal and -shm files too', async () => {
    s = setup((root) => join(root, 'data', 'spool'));
    const spool = s.open();
    spool.add([event('a')], timeout());

    expect(modes()).toEqual({ dir: '700', 'spool.sqlite': '600', 'spool.sqlite-wal': '600', 'spool.sqlite-shm': '600' });
    // The parent stays as the umask makes it: another user (PostgreSQL's, for .data/postgres) may need to traverse it.
    expect((statSync(join(s.dir, '..')).mode & 0o777).toString(8)).toBe('755');
    await s.close(spool);
  });

  it("makes an older version's spool private at start, saying so, and keeps what it holds", async () => {
    s = setup((root) => join(root, 'spool'));
    let spool = s.open();
    s.database.failWith = timeout;
    spool.add([event('a')], timeout());
    await s.close(spool);
    // As an older version left it: the directory 0755, the files 0644, a -wal and -shm beside them (a run still open).
    chmodSync(s.dir, 0o755);
    chmodSync(join(s.dir, 'spool.sqlite'), 0o644);
    const older = new Database(join(s.dir, 'spool.sqlite'));
    older.pragma('journal_mode = WAL');
    older.exec('CREATE TABLE IF NOT EXISTS older_run (n INTEGER)');
    expect(modes()).toEqual({ dir: '755', 'spool.sqlite': '644', 'spool.sqlite-wal': '644', 'spool.sqlite-shm': '644' });
    warnings = [];

    spool = new AckSpool(s.config, s.database as unknown as PozyEventRepository, new ReconcileSignal(), s.watch);
    spool.onModuleInit();

    expect(modes()).toEqual({ dir: '700', 'spool.sqlite': '600', 'spool.sqlite-wal': '600', 'spool.sqlite-shm': '600' });
    expect(warnings).toEqual([
      `Made ${s.dir} private (0755 to 0700): the spool holds whole event payloads`,
      ...FILES.map((file) => `Made ${join(s.dir, file)} private (0644 to 0600): the spool holds whole event payloads`),
    ]);
    expect(spool.counts()).toEqual({ pending: 1, dead: 0 });
    older.close();
    spool.onApplicationShutdown();
  });

  it('leaves a spool already private as it is, without a word', async () => {
    s = setup((root) => join(root, 'spool'));
    mkdirSync(s.dir, { mode: 0o700 });
    await s.close(s.open());
    await s.close(s.open());

    expect(warnings).toEqual([]);
  });
});
