import { Injectable } from '@nestjs/common';
import { sql } from 'kysely';
import { DatabaseService, Db } from '../database.service';
import { GenerateSql, Sample } from '../sql-snapshot';
import type { BatchResult } from './background-migration';

/** One background data migration's progress, as /sync/status and the status page show it. */
export interface DataMigrationProgress {
  name: string;
  state: 'running' | 'done';
  cursor: string | null;
  rowsDone: number;
  rowsTotal: number | null;
  batches: number;
  startedAt: Date;
  updatedAt: Date;
  finishedAt: Date | null;
  lastError: string | null;
}

/** data_migration: each background data migration's state, cursor and counts. */
@Injectable()
export class DataMigrationRepository {
  constructor(private readonly database: DatabaseService) {}

  /** The migration's row, made (with its estimate) the first time a worker starts it. */
  @GenerateSql({ params: ['20260101000000_sample', Sample.NUMBER] })
  async start(name: string, rowsTotal: number): Promise<DataMigrationProgress> {
    await this.database.db
      .insertInto('data_migration')
      .values({ name, rows_total: String(Math.round(rowsTotal)) })
      .onConflict((oc) => oc.column('name').doNothing())
      .execute();
    return (await this.find(name))!;
  }

  @GenerateSql({ params: ['20260101000000_sample'] })
  async find(name: string): Promise<DataMigrationProgress | undefined> {
    const row = await this.database.db.selectFrom('data_migration').selectAll().where('name', '=', name).executeTakeFirst();
    return row && toProgress(row);
  }

  /** Every one, oldest first: a handful, one per background migration a release ever shipped. `db`: the status's snapshot. */
  @GenerateSql()
  async list(db: Db = this.database.db): Promise<DataMigrationProgress[]> {
    const rows = await db.selectFrom('data_migration').selectAll().orderBy('started_at').orderBy('name').execute();
    return rows.map(toProgress);
  }

  /** In the batch's own transaction: the cursor moves only with the rows it stands for. */
  @GenerateSql({ params: [Sample.DB, '20260101000000_sample', { cursor: 'abc', rows: 10 }] })
  async recordBatch(trx: Db, name: string, result: BatchResult): Promise<void> {
    await trx
      .updateTable('data_migration')
      .set((eb) => ({
        cursor: result.cursor,
        rows_done: eb('rows_done', '+', String(result.rows)),
        batches: eb('batches', '+', 1),
        updated_at: sql<Date>`now()`,
        last_error: null,
      }))
      .where('name', '=', name)
      .execute();
  }

  @GenerateSql({ params: ['20260101000000_sample'] })
  async finish(name: string): Promise<void> {
    await this.database.db
      .updateTable('data_migration')
      .set({ state: 'done', finished_at: sql<Date>`now()`, updated_at: sql<Date>`now()`, last_error: null })
      .where('name', '=', name)
      .execute();
  }

  /** A failed batch: kept until one succeeds; the batch is tried again from the same cursor. */
  @GenerateSql({ params: ['20260101000000_sample', Sample.STRING] })
  async recordFailure(name: string, error: string): Promise<void> {
    await this.database.db
      .updateTable('data_migration')
      .set({ last_error: error.slice(0, 2_000), updated_at: sql<Date>`now()` })
      .where('name', '=', name)
      .execute();
  }
}

function toProgress(row: {
  name: string;
  state: string;
  cursor: string | null;
  rows_done: string;
  rows_total: string | null;
  batches: number;
  started_at: Date;
  updated_at: Date;
  finished_at: Date | null;
  last_error: string | null;
}): DataMigrationProgress {
  return {
    name: row.name,
    state: row.state === 'done' ? 'done' : 'running',
    cursor: row.cursor,
    rowsDone: Number(row.rows_done),
    rowsTotal: row.rows_total === null ? null : Number(row.rows_total),
    batches: row.batches,
    startedAt: row.started_at,
    updatedAt: row.updated_at,
    finishedAt: row.finished_at,
    lastError: row.last_error,
  };
}
