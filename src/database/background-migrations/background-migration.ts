import type { Db } from '../database.service';

/** What one batch changed: the key of its last row (the next batch starts after it) and how many rows it changed. */
export interface BatchResult {
  cursor: string;
  rows: number;
}

/**
 * A change to every row of a table that a migration must not make in one statement (it would hold the table, or
 * write it whole in one transaction): the migration adds what it needs (a nullable column, a table), and this fills
 * it in batches, in key order, one worker at a time, resumable after a crash from the last batch committed. The code
 * reads the old and the new shape of the data until it is done (BackgroundMigrations.done()). docs/development.md,
 * Migrations, has the rules.
 */
export interface BackgroundMigration {
  /** Never reused: `<timestamp>_<what>`, like a migration's folder. */
  readonly name: string;
  /** PostgreSQL's estimate of the rows it will change, for its progress (pg_class.reltuples, never a count). */
  estimateRows(db: Db): Promise<number>;
  /**
   * Changes up to `size` rows after `cursor` (null: from the first) in `trx`, the batch's transaction, and answers
   * what it changed; null when no row is left. Rows written meanwhile by the service must already have the new shape
   * (the write path writes both), so a batch never needs to look behind its cursor.
   */
  batch(trx: Db, cursor: string | null, size: number): Promise<BatchResult | null>;
}

/** The background migrations of this release (registry.ts), injected where they run. */
export const BACKGROUND_MIGRATIONS = Symbol('BACKGROUND_MIGRATIONS');
