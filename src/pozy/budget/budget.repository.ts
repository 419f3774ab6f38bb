import { Injectable } from '@nestjs/common';
import { sql } from 'kysely';
import { DatabaseService } from '../../database/database.service';
import { BudgetState, readState } from './budget-policy';
import { GenerateSql, Sample } from '../../database/sql-snapshot';

export interface StoredBudget {
  state: BudgetState;
  version: number;
  /** The database's clock (ms): every replica dates grants by it, so their clocks need not agree. */
  now: number;
}

/**
 * One row per Pozy API key (`keyId`: budget-key.ts), shared by every replica and every workspace using that key.
 * Written with optimistic concurrency (a version compared on update) rather than a row lock: a take is two short
 * statements, and no transaction is held across them.
 */
@Injectable()
export class BudgetRepository {
  constructor(private readonly database: DatabaseService) {}

  @GenerateSql({ params: [Sample.UUID] })
  async read(keyId: string): Promise<StoredBudget> {
    const stored = await this.select(keyId);
    if (stored) return stored;
    // A key's first take makes its row (a budget's state is soft: Pozy's headers and 429s rebuild it).
    await this.database.db
      .insertInto('pozy_budget')
      .values({ key_id: keyId, state: '{}', version: 0 })
      .onConflict((oc) => oc.column('key_id').doNothing())
      .execute();
    const created = await this.select(keyId);
    if (!created) throw new Error('The pozy_budget row could not be created');
    return created;
  }

  @GenerateSql({ none: 'a helper: its statements show under the methods that call it' })
  private async select(keyId: string): Promise<StoredBudget | undefined> {
    const row = await this.database.db
      .selectFrom('pozy_budget')
      .select(['state', 'version', sql<number>`(extract(epoch FROM clock_timestamp()) * 1000)::float8`.as('now')])
      .where('key_id', '=', keyId)
      .executeTakeFirst();
    return row && { state: readState(row.state), version: row.version, now: row.now };
  }

  /** Stores `state` unless another take stored one since `version` was read; false then (read again). */
  @GenerateSql({
    params: [Sample.UUID, { tokens: 10, at: 0, pausedUntil: 0, slots: [], demandUntil: [], starvedGrantAt: [], remote: null }, Sample.NUMBER],
  })
  async write(keyId: string, state: BudgetState, version: number): Promise<boolean> {
    const result = await this.database.db
      .updateTable('pozy_budget')
      .set((eb) => ({
        state: JSON.stringify({ ...state, tokens: Number.isNaN(state.tokens) ? null : state.tokens }),
        version: eb('version', '+', 1),
      }))
      .where('key_id', '=', keyId)
      .where('version', '=', version)
      .executeTakeFirst();
    return result.numUpdatedRows === 1n;
  }
}
