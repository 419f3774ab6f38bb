import { Injectable } from '@nestjs/common';
import { boundedText } from '../common/bounded-text';
import { Selectable, sql } from 'kysely';
import { DatabaseService } from '../database/database.service';
import { milliseconds, now } from '../database/sql-expressions';
import type { DB } from '../generated/kysely/database';
import { GenerateSql, Sample } from '../database/sql-snapshot';

export const REPLAY_QUEUES = ['delivery', 'ack'] as const;
export type ReplayQueue = (typeof REPLAY_QUEUES)[number];
const STATUSES = ['running', 'succeeded', 'failed', 'interrupted'] as const;
export type ReplayRunStatus = (typeof STATUSES)[number];

/**
 * A `running` run whose heartbeat is older than this lost its process (killed, or gone with its host): it is answered
 * as `interrupted`. The runner beats every few seconds, whatever its batches are doing.
 */
export const REPLAY_HEARTBEAT_STALE_MS = 30_000;

/** A bulk replay as `GET /admin/dead-letters/replay/:runId` answers it. */
export interface ReplayRun {
  id: string;
  queue: ReplayQueue;
  status: ReplayRunStatus;
  host: string;
  spoolId: string | null;
  startedAt: Date;
  heartbeatAt: Date;
  finishedAt: Date | null;
  total: number;
  replayed: number;
  skipped: number;
  batches: number;
  error: string | null;
}

export type ReplayProgress = Pick<ReplayRun, 'replayed' | 'skipped' | 'batches'>;

function oneOf<T extends string>(values: readonly T[], value: string, what: string): T {
  const known = values.find((v) => v === value);
  if (known === undefined) throw new Error(`dead_letter_replay_run has an unknown ${what}: ${value}`);
  return known;
}

type Row = Selectable<DB['dead_letter_replay_run']> & { stale: boolean };

function toRun(row: Row): ReplayRun {
  const status = oneOf(STATUSES, row.status, 'status');
  return {
    id: row.id,
    queue: oneOf(REPLAY_QUEUES, row.queue, 'queue'),
    status: status === 'running' && row.stale ? 'interrupted' : status,
    host: row.host,
    spoolId: row.spool_id,
    startedAt: row.started_at,
    heartbeatAt: row.heartbeat_at,
    finishedAt: row.finished_at,
    total: row.total,
    replayed: row.replayed,
    skipped: row.skipped,
    batches: row.batches,
    error: row.error,
  };
}

/** `dead_letter_replay_run`: the bulk replays of both dead-letter queues. */
@Injectable()
export class DeadLetterReplayRunRepository {
  constructor(private readonly database: DatabaseService) {}

  @GenerateSql({ none: 'a helper: its statements show under the methods that call it' })
  private select() {
    return this.database.db
      .selectFrom('dead_letter_replay_run')
      .selectAll()
      .select(sql<boolean>`status = 'running' AND heartbeat_at < ${now()} - ${milliseconds(REPLAY_HEARTBEAT_STALE_MS)}`.as('stale'));
  }

  /** A new run, started now by the database's clock (the bound of the letters it takes). */
  @GenerateSql({ params: [{ id: Sample.UUID, queue: 'delivery', host: Sample.STRING, spoolId: null }] })
  async create(run: Pick<ReplayRun, 'id' | 'queue' | 'host' | 'spoolId'>): Promise<ReplayRun> {
    await this.database.db
      .insertInto('dead_letter_replay_run')
      .values({ id: run.id, queue: run.queue, status: 'running', host: run.host, spool_id: run.spoolId })
      .execute();
    return (await this.get(run.id))!;
  }

  @GenerateSql({ params: [Sample.UUID, Sample.NUMBER] })
  async setTotal(id: string, total: number): Promise<void> {
    await this.database.db.updateTable('dead_letter_replay_run').set({ total }).where('id', '=', id).execute();
  }

  /**
   * Runs of this queue (of this spool, for `ack`) still marked running, whose process is gone: the caller runs the
   * queue alone now (it holds the queue's lock, or the spool is its own). Answers how many were.
   */
  @GenerateSql({ params: ['delivery', null] })
  async interruptLeftovers(queue: ReplayQueue, spoolId: string | null): Promise<number> {
    const { numUpdatedRows } = await this.database.db
      .updateTable('dead_letter_replay_run')
      .set({ status: 'interrupted', finished_at: sql<Date>`now()`, error: 'its replica stopped before the run finished' })
      .where('queue', '=', queue)
      .where('status', '=', 'running')
      .where((eb) => (spoolId === null ? eb.val(true) : eb('spool_id', '=', spoolId)))
      .executeTakeFirst();
    return Number(numUpdatedRows);
  }

  @GenerateSql({ params: [Sample.UUID, { replayed: 1, skipped: 0, batches: 1 }] })
  async progress(id: string, progress: ReplayProgress): Promise<void> {
    await this.database.db
      .updateTable('dead_letter_replay_run')
      .set({ ...progress, heartbeat_at: sql<Date>`now()` })
      .where('id', '=', id)
      .execute();
  }

  @GenerateSql({ params: [[Sample.UUID]] })
  async heartbeat(ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.database.db
      .updateTable('dead_letter_replay_run')
      .set({ heartbeat_at: sql<Date>`now()` })
      .where('id', 'in', ids)
      .where('status', '=', 'running')
      .execute();
  }

  @GenerateSql({ params: [Sample.UUID, 'succeeded', { replayed: 1, skipped: 0, batches: 1 }, null] })
  async finish(id: string, status: Exclude<ReplayRunStatus, 'running'>, progress: ReplayProgress, error: string | null): Promise<void> {
    await this.database.db
      .updateTable('dead_letter_replay_run')
      .set({ ...progress, status, error: error === null ? null : boundedText(error), finished_at: sql<Date>`now()`, heartbeat_at: sql<Date>`now()` })
      .where('id', '=', id)
      .execute();
  }

  @GenerateSql({ params: [Sample.UUID] })
  async get(id: string): Promise<ReplayRun | undefined> {
    const row = await this.select().where('id', '=', id).executeTakeFirst();
    return row && toRun(row);
  }

  /** The newest run of this queue (this spool's, for `ack`) still marked running, if any. */
  @GenerateSql({ params: ['delivery', null] })
  async running(queue: ReplayQueue, spoolId: string | null): Promise<ReplayRun | undefined> {
    const row = await this.select()
      .where('queue', '=', queue)
      .where('status', '=', 'running')
      .where((eb) => (spoolId === null ? eb.val(true) : eb('spool_id', '=', spoolId)))
      .orderBy('started_at', 'desc')
      .limit(1)
      .executeTakeFirst();
    return row && toRun(row);
  }

  /** Deletes up to `limit` finished runs started before `cutoff` (a running one is never pruned); answers how many. */
  @GenerateSql({ params: [Sample.DATE, Sample.NUMBER] })
  async pruneBefore(cutoff: Date, limit: number): Promise<number> {
    const db = this.database.db;
    const { numDeletedRows } = await db
      .deleteFrom('dead_letter_replay_run')
      .where('id', 'in', (eb) =>
        eb
          .selectFrom('dead_letter_replay_run')
          .select('id')
          .where('status', '<>', 'running')
          .where('started_at', '<', cutoff)
          .limit(limit)
          .forUpdate()
          .skipLocked(),
      )
      .executeTakeFirst();
    return Number(numDeletedRows);
  }
}
