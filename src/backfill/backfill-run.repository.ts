import { Injectable } from '@nestjs/common';
import { DatabaseService } from '../database/database.service';

export interface BackfillRun {
  id: string;
  trigger: 'schedule' | 'admin';
  status: 'running' | 'succeeded' | 'failed';
  startedAt: Date;
  finishedAt: Date | null;
  scanFrom: Date | null;
  newestLogAt: Date | null;
  rowsScanned: number;
  eventsRecovered: number;
  narrowedTypes: string[];
  error: string | null;
}

const COLUMNS = `id, trigger, status, started_at AS "startedAt", finished_at AS "finishedAt", scan_from AS "scanFrom",
  newest_log_at AS "newestLogAt", rows_scanned AS "rowsScanned", events_recovered AS "eventsRecovered",
  narrowed_types AS "narrowedTypes", error`;

@Injectable()
export class BackfillRunRepository {
  constructor(private readonly database: DatabaseService) {}

  /** Where the next run starts: the newest log row the last successful run saw, or null (never ran). */
  async checkpoint(): Promise<Date | null> {
    const { rows } = await this.database.pool.query<{ newest: Date | null }>(
      `SELECT newest_log_at AS newest FROM backfill_run WHERE status = 'succeeded' AND newest_log_at IS NOT NULL
        ORDER BY newest_log_at DESC LIMIT 1`,
    );
    return rows[0]?.newest ?? null;
  }

  async create(run: Pick<BackfillRun, 'id' | 'trigger' | 'scanFrom'>): Promise<void> {
    await this.database.pool.query(
      `INSERT INTO backfill_run (id, trigger, status, scan_from) VALUES ($1, $2, 'running', $3)`,
      [run.id, run.trigger, run.scanFrom],
    );
  }

  async progress(id: string, p: Pick<BackfillRun, 'newestLogAt' | 'rowsScanned' | 'eventsRecovered' | 'narrowedTypes'>): Promise<void> {
    await this.database.pool.query(
      `UPDATE backfill_run SET newest_log_at = $2, rows_scanned = $3, events_recovered = $4, narrowed_types = $5 WHERE id = $1`,
      [id, p.newestLogAt, p.rowsScanned, p.eventsRecovered, p.narrowedTypes],
    );
  }

  async finish(id: string, status: 'succeeded' | 'failed', error: string | null): Promise<void> {
    await this.database.pool.query(`UPDATE backfill_run SET status = $2, error = $3, finished_at = now() WHERE id = $1`, [
      id,
      status,
      error,
    ]);
  }

  async get(id: string): Promise<BackfillRun | undefined> {
    const { rows } = await this.database.pool.query<BackfillRun>(`SELECT ${COLUMNS} FROM backfill_run WHERE id = $1`, [id]);
    return rows[0];
  }

  async latest(): Promise<BackfillRun | undefined> {
    const { rows } = await this.database.pool.query<BackfillRun>(`SELECT ${COLUMNS} FROM backfill_run ORDER BY started_at DESC LIMIT 1`);
    return rows[0];
  }

  async running(): Promise<BackfillRun | undefined> {
    const { rows } = await this.database.pool.query<BackfillRun>(
      `SELECT ${COLUMNS} FROM backfill_run WHERE status = 'running' ORDER BY started_at DESC LIMIT 1`,
    );
    return rows[0];
  }

  /** Which of these event ids are not stored yet. */
  async missing(eventIds: string[]): Promise<Set<string>> {
    const { rows } = await this.database.pool.query<{ id: string }>('SELECT id FROM pozy_event WHERE id = ANY($1::text[])', [eventIds]);
    const stored = new Set(rows.map((r) => r.id));
    return new Set(eventIds.filter((id) => !stored.has(id)));
  }
}
