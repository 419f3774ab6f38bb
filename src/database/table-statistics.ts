import { Injectable, Logger } from '@nestjs/common';
import { sql } from 'kysely';
import { DatabaseService } from './database.service';

/** Below this many rows written since the last ANALYZE, a table's statistics are left as they are during a run. */
const MIN_ROWS = 1_000;
/** During a run, a table is analyzed again once this share of its live rows has been written since the last time. */
const SHARE_DURING = 0.5;
/** At a run's end, a table is analyzed when this share of its live rows has been written since (autovacuum's default). */
const SHARE_AT_END = 0.1;
/** ANALYZE waits this long at most for its lock (another ANALYZE or a VACUUM of the table): then it is left for later. */
const LOCK_TIMEOUT = '1s';

interface TableActivity {
  table: string;
  live: number;
  modified: number;
  analyzed: boolean;
  /** The heap's pages at its last ANALYZE or VACUUM (pg_class.relpages), and now (its file's size). */
  pagesThen: number;
  pagesNow: number;
}

/**
 * Keeps the statistics of tables a run fills or rewrites (an import writes a whole workspace in minutes, long before
 * autovacuum's next look) fresh enough for the planner, while it runs: a table whose rows written since its last
 * ANALYZE reach max(MIN_ROWS, SHARE_DURING of its live rows) is analyzed, so the first time after about two pages and
 * then each time it has doubled (half its rows are new), seven times over a 100,000-post import. ANALYZE reads a
 * sample of 300 rows per unit of the largest statistics target among the table's columns, whatever the table's size
 * (post's `search` has 1,000: every row up to 300,000, about 2.4 s at 100,000 posts on a 2-core machine), and takes a
 * lock that writers do not conflict with. During runs, one ANALYZE at a time in this process, never in a page's
 * transaction, never waited for by a page; at a run's end, every table due at once.
 */
@Injectable()
export class TableStatistics {
  private readonly logger = new Logger(TableStatistics.name);
  private running: Promise<void> | undefined;

  constructor(private readonly database: DatabaseService) {}

  /**
   * After a page was written to `tables`: analyzes those past the rule, unless an ANALYZE is under way already. The
   * caller does not wait for it (the promise is for tests).
   */
  written(tables: readonly string[]): Promise<void> {
    this.running ??= this.analyze(tables, (t) => t.modified >= Math.max(MIN_ROWS, SHARE_DURING * t.live)).finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  /**
   * At a run's end, once what is under way has finished: analyzes each of `tables` never analyzed yet that was
   * written, or written by SHARE_AT_END of its rows since its last ANALYZE, so that it ends with fresh statistics.
   * A backend reports what it wrote at most once a second, and an idle one up to ten seconds later, so the run's last
   * pages may not be counted yet: a table whose file grew by SHARE_AT_END since its last ANALYZE is due as well.
   * `runRows`, the rows the run itself wrote at most, keeps a small run out of it when other runs did the writing:
   * many small imports ending beside each other would otherwise analyze the same shared tables at every end, and
   * wait on each other's locks, for writes that were not theirs and that the rule during runs already watches.
   */
  async settle(tables: readonly string[], runRows?: number): Promise<void> {
    await this.running;
    await this.analyze(
      tables,
      (t) =>
        ((t.modified > 0 && (!t.analyzed || t.modified >= SHARE_AT_END * t.live)) ||
          (t.pagesNow > 0 && t.pagesNow >= (1 + SHARE_AT_END) * t.pagesThen)) &&
        (runRows === undefined || (t.analyzed ? runRows >= SHARE_AT_END * t.live : runRows > 0)),
      // The run waits for these, with its pages written and the cores free: each table on a connection of its own, so
      // the wait is the largest table's ANALYZE rather than the sum (about 0.6 s less at the end of a 100,000-post import).
      'at once',
    );
  }

  private async analyze(tables: readonly string[], due: (t: TableActivity) => boolean, order: 'in turn' | 'at once' = 'in turn'): Promise<void> {
    try {
      const activity = (await this.activity(tables)).filter(due);
      const one = async (t: TableActivity) => {
        await this.database.db.transaction().execute(async (trx) => {
          await sql`SET LOCAL lock_timeout = ${sql.lit(LOCK_TIMEOUT)}`.execute(trx);
          await sql`ANALYZE ${sql.table(t.table)}`.execute(trx);
        });
        this.logger.debug(`analyzed ${t.table}: ${t.modified} rows written since its last analysis, about ${t.live} live`);
      };
      if (order === 'in turn') for (const t of activity) await one(t);
      else {
        // Each to its end, so that the run is not seen done while one still runs; the first failure is reported below.
        const failed = (await Promise.allSettled(activity.map(one))).find((result) => result.status === 'rejected');
        if (failed) throw failed.reason;
      }
    } catch (error) {
      // Statistics are an optimisation: autovacuum still gets to the table.
      this.logger.warn(`Could not analyze ${tables.join(', ')}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  /** What PostgreSQL's cumulative statistics say of these tables (counted within about a second of each commit). */
  private async activity(tables: readonly string[]): Promise<TableActivity[]> {
    const { rows } = await sql<{
      table: string;
      live: string;
      modified: string;
      analyzed: boolean;
      pagesThen: number;
      pagesNow: string;
    }>`
      SELECT s.relname AS table, s.n_live_tup AS live, s.n_mod_since_analyze AS modified,
             (s.last_analyze IS NOT NULL OR s.last_autoanalyze IS NOT NULL) AS analyzed,
             c.relpages AS "pagesThen", pg_relation_size(s.relid) / current_setting('block_size')::int AS "pagesNow"
        FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
       WHERE s.schemaname = current_schema() AND s.relname = ANY(${[...tables]}::text[])
       ORDER BY s.relname`.execute(this.database.db);
    return rows.map((r) => ({
      table: r.table,
      live: Number(r.live),
      modified: Number(r.modified),
      analyzed: r.analyzed,
      pagesThen: r.pagesThen,
      pagesNow: Number(r.pagesNow),
    }));
  }
}
