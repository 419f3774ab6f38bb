import { Injectable } from '@nestjs/common';
import { DatabaseService } from '../../database/database.service';
import { BudgetState, readState } from './budget-policy';

export interface StoredBudget {
  state: BudgetState;
  version: number;
  /** The database's clock (ms): every replica dates grants by it, so their clocks need not agree. */
  now: number;
}

/**
 * The one row every replica's budget shares. Written with optimistic concurrency (a version compared on update)
 * rather than a row lock: a take is two short statements, and no transaction is held across them.
 */
@Injectable()
export class BudgetRepository {
  constructor(private readonly database: DatabaseService) {}

  async read(): Promise<StoredBudget> {
    const stored = await this.select();
    if (stored) return stored;
    // The migration creates the row; a database restored without it gets a fresh one.
    await this.database.pool.query(`INSERT INTO pozy_budget (id, state, version) VALUES (1, '{}', 0) ON CONFLICT (id) DO NOTHING`);
    const created = await this.select();
    if (!created) throw new Error('The pozy_budget row could not be created');
    return created;
  }

  private async select(): Promise<StoredBudget | undefined> {
    const { rows } = await this.database.pool.query<{ state: unknown; version: number; now: number }>(
      `SELECT state, version, (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS now FROM pozy_budget WHERE id = 1`,
    );
    return rows[0] && { state: readState(rows[0].state), version: rows[0].version, now: rows[0].now };
  }

  /** Stores `state` unless another take stored one since `version` was read; false then (read again). */
  async write(state: BudgetState, version: number): Promise<boolean> {
    const { rowCount } = await this.database.pool.query(
      `UPDATE pozy_budget SET state = $1::jsonb, version = version + 1 WHERE id = 1 AND version = $2`,
      [JSON.stringify({ ...state, tokens: Number.isNaN(state.tokens) ? null : state.tokens }), version],
    );
    return rowCount === 1;
  }
}
