import { Injectable } from '@nestjs/common';
import { sql } from 'kysely';
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
    await this.database.db
      .insertInto('pozy_budget')
      .values({ id: 1, state: '{}', version: 0 })
      .onConflict((oc) => oc.column('id').doNothing())
      .execute();
    const created = await this.select();
    if (!created) throw new Error('The pozy_budget row could not be created');
    return created;
  }

  private async select(): Promise<StoredBudget | undefined> {
    const row = await this.database.db
      .selectFrom('pozy_budget')
      .select(['state', 'version', sql<number>`(extract(epoch FROM clock_timestamp()) * 1000)::float8`.as('now')])
      .where('id', '=', 1)
      .executeTakeFirst();
    return row && { state: readState(row.state), version: row.version, now: row.now };
  }

  /** Stores `state` unless another take stored one since `version` was read; false then (read again). */
  async write(state: BudgetState, version: number): Promise<boolean> {
    const result = await this.database.db
      .updateTable('pozy_budget')
      .set((eb) => ({
        state: JSON.stringify({ ...state, tokens: Number.isNaN(state.tokens) ? null : state.tokens }),
        version: eb('version', '+', 1),
      }))
      .where('id', '=', 1)
      .where('version', '=', version)
      .executeTakeFirst();
    return result.numUpdatedRows === 1n;
  }
}
