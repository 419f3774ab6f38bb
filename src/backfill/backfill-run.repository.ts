import { Injectable } from '@nestjs/common';
import { type Expression, type Selectable, sql } from 'kysely';
import { boundedText } from '../common/bounded-text';
import { DatabaseService, type Db } from '../database/database.service';
import type { DB } from '../generated/kysely/database';
import type { BackfillRun as BackfillRunRow } from '../generated/prisma/client';
import type { WorkspaceId } from '../common/workspace-id';
import { GenerateSql, Sample } from '../database/sql-snapshot';

const TRIGGERS = ['schedule', 'admin'] as const;
const STATUSES = ['running', 'succeeded', 'failed'] as const;
export type BackfillTrigger = (typeof TRIGGERS)[number];
export type BackfillStatus = (typeof STATUSES)[number];

/** A run as GET /admin/backfill/:runId answers it: the model's fields, its trigger and status narrowed. */
export type BackfillRun = Omit<BackfillRunRow, 'trigger' | 'status'> & { trigger: BackfillTrigger; status: BackfillStatus };

function oneOf<T extends string>(values: readonly T[], value: string, what: string): T {
  const known = values.find((v) => v === value);
  if (known === undefined) throw new Error(`backfill_run has an unknown ${what}: ${value}`);
  return known;
}

function toRun(row: BackfillRunRow): BackfillRun {
  return { ...row, trigger: oneOf(TRIGGERS, row.trigger, 'trigger'), status: oneOf(STATUSES, row.status, 'status') };
}

function fromRow(row: Selectable<DB['backfill_run']>): BackfillRun {
  return toRun({
    workspaceId: row.workspace_id,
    id: row.id,
    trigger: row.trigger,
    status: row.status,
    startedAt: row.started_at,
    finishedAt: row.finished_at,
    scanFrom: row.scan_from,
    newestLogAt: row.newest_log_at,
    rowsScanned: row.rows_scanned,
    eventsRecovered: row.events_recovered,
    eventsSkipped: row.events_skipped,
    narrowedTypes: row.narrowed_types,
    error: row.error,
  });
}

/**
 * The run whose newest log row is the checkpoint: the newest newest_log_at of a succeeded run. Retention never
 * deletes it: without it the next backfill would scan Pozy's whole 30 days of logs and store every pruned event
 * still in them again.
 */
const checkpointRun = (db: Db, workspaceId: Expression<string> | WorkspaceId) =>
  db
    .selectFrom('backfill_run')
    .where('workspace_id', '=', workspaceId)
    .where('status', '=', 'succeeded')
    .where('newest_log_at', 'is not', null)
    .orderBy('newest_log_at', 'desc')
    .limit(1);

@Injectable()
export class BackfillRunRepository {
  constructor(private readonly database: DatabaseService) {}

  /** Where the next run starts: the newest log row the last successful run saw, or null (never ran). */
  @GenerateSql({ params: [Sample.WORKSPACE] })
  async checkpoint(workspaceId: WorkspaceId): Promise<Date | null> {
    const row = await checkpointRun(this.database.db, workspaceId).select('newest_log_at').executeTakeFirst();
    return row?.newest_log_at ?? null;
  }

  /** started_at is the database's clock, like finished_at. */
  @GenerateSql({ params: [{ workspaceId: Sample.WORKSPACE, id: Sample.UUID, trigger: 'cron', scanFrom: Sample.DATE }] })
  async create(run: Pick<BackfillRun, 'workspaceId' | 'id' | 'trigger' | 'scanFrom'>): Promise<void> {
    await this.database.db
      .insertInto('backfill_run')
      .values({ workspace_id: run.workspaceId, id: run.id, trigger: run.trigger, status: 'running', scan_from: run.scanFrom })
      .execute();
  }

  @GenerateSql({ params: [Sample.UUID, { newestLogAt: Sample.DATE, rowsScanned: 1, eventsRecovered: 1, eventsSkipped: 0, narrowedTypes: false }] })
  async progress(
    id: string,
    p: Pick<BackfillRun, 'newestLogAt' | 'rowsScanned' | 'eventsRecovered' | 'eventsSkipped' | 'narrowedTypes'>,
  ): Promise<void> {
    await this.database.db
      .updateTable('backfill_run')
      .set({
        newest_log_at: p.newestLogAt,
        rows_scanned: p.rowsScanned,
        events_recovered: p.eventsRecovered,
        events_skipped: p.eventsSkipped,
        narrowed_types: p.narrowedTypes,
      })
      .where('id', '=', id)
      .execute();
  }

  @GenerateSql({ params: [Sample.UUID, 'succeeded', null] })
  async finish(id: string, status: 'succeeded' | 'failed', error: string | null): Promise<void> {
    await this.database.db
      .updateTable('backfill_run')
      .set({ status, error: error === null ? null : boundedText(error), finished_at: sql<Date>`now()` })
      .where('id', '=', id)
      .execute();
  }

  @GenerateSql({ params: [Sample.UUID] })
  async get(id: string): Promise<BackfillRun | undefined> {
    const row = await this.database.db.selectFrom('backfill_run').selectAll().where('id', '=', id).executeTakeFirst();
    return row && fromRow(row);
  }

  /** The newest run; in the caller's snapshot when it passes one (the status reads every figure in one). */
  @GenerateSql({ params: [] })
  async latest(db: Db = this.database.db): Promise<BackfillRun | undefined> {
    const row = await db.selectFrom('backfill_run').selectAll().orderBy('started_at', 'desc').limit(1).executeTakeFirst();
    return row && fromRow(row);
  }

  /** The workspace's newest run. */
  @GenerateSql({ params: [Sample.WORKSPACE] })
  async latestOf(workspaceId: WorkspaceId): Promise<BackfillRun | undefined> {
    const row = await this.database.db
      .selectFrom('backfill_run')
      .selectAll()
      .where('workspace_id', '=', workspaceId)
      .orderBy('started_at', 'desc')
      .limit(1)
      .executeTakeFirst();
    return row && fromRow(row);
  }

  @GenerateSql({ params: [Sample.WORKSPACE] })
  async running(workspaceId: WorkspaceId): Promise<BackfillRun | undefined> {
    const row = await this.database.db
      .selectFrom('backfill_run')
      .selectAll()
      .where('workspace_id', '=', workspaceId)
      .where('status', '=', 'running')
      .orderBy('started_at', 'desc')
      .limit(1)
      .executeTakeFirst();
    return row && fromRow(row);
  }

  /** Which of these event ids are not stored yet. */
  @GenerateSql({ params: [Sample.WORKSPACE, [Sample.UUID]] })
  async missing(workspaceId: WorkspaceId, eventIds: string[]): Promise<Set<string>> {
    if (eventIds.length === 0) return new Set();
    const rows = await this.database.db
      .selectFrom('pozy_event')
      .select('id')
      .where('workspace_id', '=', workspaceId)
      .where('id', 'in', eventIds)
      .execute();
    const stored = new Set(rows.map((r) => r.id));
    return new Set(eventIds.filter((id) => !stored.has(id)));
  }

  /**
   * Retention: deletes up to `limit` finished runs that finished before `cutoff`, never the checkpoint's run; answers
   * how many. Rows are picked by primary key with FOR UPDATE SKIP LOCKED, so a run being written now waits for the
   * next prune instead of holding this one up.
   */
  @GenerateSql({ params: [Sample.DATE, Sample.NUMBER] })
  async pruneBefore(cutoff: Date, limit: number): Promise<number> {
    const db = this.database.db;
    const { numDeletedRows } = await db
      .deleteFrom('backfill_run')
      .using(
        db
          .selectFrom('backfill_run as r')
          .select(['r.workspace_id', 'r.id'])
          .where('r.status', '<>', 'running')
          .where('r.finished_at', '<', cutoff)
          // Each workspace keeps its checkpoint's run.
          .where('r.id', 'is distinct from', (eb) => checkpointRun(db, eb.ref('r.workspace_id')).select('backfill_run.id'))
          .limit(limit)
          .forUpdate()
          .skipLocked()
          .as('old'),
      )
      .whereRef('backfill_run.workspace_id', '=', 'old.workspace_id')
      .whereRef('backfill_run.id', '=', 'old.id')
      .executeTakeFirst();
    return Number(numDeletedRows);
  }
}
