import { Injectable } from '@nestjs/common';
import { sql } from 'kysely';
import { DatabaseService } from '../database/database.service';
import type { ChangeType } from './record-changes';
import { GenerateSql, Sample } from '../database/sql-snapshot';

/** A named consumer's definition: its filters (empty lists: no filter) and its partitions. */
export interface ConsumerDefinition {
  name: string;
  types: ChangeType[];
  workspaces: string[];
  profileIds: string[];
  platforms: string[];
  partitions: number;
}

export interface ConsumerPartitionState {
  partition: number;
  /** The committed position. */
  cursor: string;
  committedAt: Date | null;
  lastReadAt: Date | null;
  expiredAt: Date | null;
}

export interface StoredConsumer extends ConsumerDefinition {
  createdAt: Date;
  /** By partition, 0 first. */
  partitionStates: ConsumerPartitionState[];
}

/** What a commit found and did, decided in one transaction with the partition's row locked. */
export type CommitOutcome =
  | { kind: 'committed'; state: ConsumerPartitionState }
  | { kind: 'unchanged'; state: ConsumerPartitionState }
  | { kind: 'behind'; state: ConsumerPartitionState }
  | { kind: 'not_found' };

/** The consumer and consumer_partition tables' one owner. */
@Injectable()
export class ConsumerRepository {
  constructor(private readonly database: DatabaseService) {}

  /** null when a consumer of this name exists. Every partition starts at `cursor`. */
  @GenerateSql({
    params: [
      { name: Sample.STRING, types: ['post.updated'], workspaces: [Sample.WORKSPACE], profileIds: [], platforms: [], partitions: 2 },
      Sample.STRING,
    ],
  })
  async create(definition: ConsumerDefinition, cursor: string): Promise<StoredConsumer | null> {
    return this.database.db.transaction().execute(async (trx) => {
      const row = await trx
        .insertInto('consumer')
        .values({
          name: definition.name,
          types: definition.types,
          workspaces: definition.workspaces,
          profile_ids: definition.profileIds,
          platforms: definition.platforms,
          partitions: definition.partitions,
        })
        .onConflict((oc) => oc.column('name').doNothing())
        .returning('created_at')
        .executeTakeFirst();
      if (!row) return null;
      const partitions = Array.from({ length: definition.partitions }, (_, partition) => ({ consumer_name: definition.name, partition, cursor }));
      await trx.insertInto('consumer_partition').values(partitions).execute();
      return {
        ...definition,
        createdAt: row.created_at,
        partitionStates: partitions.map(({ partition }) => ({ partition, cursor, committedAt: null, lastReadAt: null, expiredAt: null })),
      };
    });
  }

  /** Consumers by name after `after`, `limit` at most. */
  @GenerateSql({ params: [Sample.NUMBER, null] })
  async list(limit: number, after: string | null): Promise<StoredConsumer[]> {
    let query = this.database.db.selectFrom('consumer').selectAll().orderBy('name').limit(limit);
    if (after !== null) query = query.where('name', '>', after);
    return this.withPartitions(await query.execute());
  }

  @GenerateSql({ params: [Sample.STRING] })
  async find(name: string): Promise<StoredConsumer | null> {
    const row = await this.database.db.selectFrom('consumer').selectAll().where('name', '=', name).executeTakeFirst();
    return row ? (await this.withPartitions([row]))[0] : null;
  }

  @GenerateSql({ params: [Sample.STRING] })
  async delete(name: string): Promise<boolean> {
    const { numDeletedRows } = await this.database.db.deleteFrom('consumer').where('name', '=', name).executeTakeFirst();
    return numDeletedRows === 1n;
  }

  /**
   * Moves a partition's committed position to `cursor`: never backwards (`behind`), the same one again changes nothing
   * (`unchanged`). An expired partition takes any cursor (the caller checked it is still retained) and is active again.
   */
  @GenerateSql({ params: [Sample.STRING, Sample.NUMBER, Sample.STRING] })
  async commit(name: string, partition: number, cursor: string): Promise<CommitOutcome> {
    return this.database.db.transaction().execute(async (trx) => {
      const row = await trx
        .selectFrom('consumer_partition')
        .select(['partition', 'cursor', 'committed_at', 'last_read_at', 'expired_at'])
        .where('consumer_name', '=', name)
        .where('partition', '=', partition)
        .forUpdate()
        .executeTakeFirst();
      if (!row) return { kind: 'not_found' };
      const state = partitionState(row);
      if (row.expired_at === null) {
        if (BigInt(cursor) < BigInt(row.cursor)) return { kind: 'behind', state };
        if (BigInt(cursor) === BigInt(row.cursor)) return { kind: 'unchanged', state };
      }
      const updated = await trx
        .updateTable('consumer_partition')
        .set({ cursor, committed_at: sql<Date>`now()`, expired_at: null })
        .where('consumer_name', '=', name)
        .where('partition', '=', partition)
        .returning(['partition', 'cursor', 'committed_at', 'last_read_at', 'expired_at'])
        .executeTakeFirstOrThrow();
      return { kind: 'committed', state: partitionState(updated) };
    });
  }

  /** Records a read; skipped when this partition's last read was recorded within the last second (by any replica). */
  @GenerateSql({ params: [Sample.STRING, Sample.NUMBER] })
  async touch(name: string, partition: number): Promise<void> {
    await this.database.db
      .updateTable('consumer_partition')
      .set({ last_read_at: sql<Date>`now()` })
      .where('consumer_name', '=', name)
      .where('partition', '=', partition)
      .where((eb) => eb.or([eb('last_read_at', 'is', null), eb('last_read_at', '<=', sql<Date>`now() - interval '1 second'`)]))
      .execute();
  }

  /** Every active partition's committed position: what retention must keep (a row per partition; 64 at most per consumer). */
  @GenerateSql({ params: [] })
  async activePartitions(): Promise<{ name: string; workspaces: string[]; partition: number; cursor: string }[]> {
    const rows = await this.database.db
      .selectFrom('consumer_partition as p')
      .innerJoin('consumer as c', 'c.name', 'p.consumer_name')
      .select(['p.consumer_name', 'c.workspaces', 'p.partition', 'p.cursor'])
      .where('p.expired_at', 'is', null)
      .execute();
    return rows.map((row) => ({ name: row.consumer_name, workspaces: row.workspaces, partition: row.partition, cursor: row.cursor }));
  }

  /** Marks these partitions expired, unless a commit moved them meanwhile; answers those it marked. */
  @GenerateSql({ params: [[{ name: Sample.STRING, partition: 0, cursor: Sample.STRING }]] })
  async expire(
    partitions: readonly { name: string; partition: number; cursor: string }[],
  ): Promise<{ name: string; partition: number; cursor: string }[]> {
    if (partitions.length === 0) return [];
    const marked: { name: string; partition: number; cursor: string }[] = [];
    for (const p of partitions) {
      const row = await this.database.db
        .updateTable('consumer_partition')
        .set({ expired_at: sql<Date>`now()` })
        .where('consumer_name', '=', p.name)
        .where('partition', '=', p.partition)
        .where('cursor', '=', p.cursor)
        .where('expired_at', 'is', null)
        .returning(['consumer_name', 'partition', 'cursor'])
        .executeTakeFirst();
      if (row) marked.push({ name: row.consumer_name, partition: row.partition, cursor: row.cursor });
    }
    return marked;
  }

  /**
   * Per consumer, its lowest committed position over its active partitions (`cursor`, null when every partition has
   * expired), and whether any partition has expired: one pass over consumer_partition, which holds a row per partition.
   */
  @GenerateSql({ params: [] })
  async positions(): Promise<{ name: string; cursor: string | null; expired: boolean }[]> {
    const rows = await this.database.db
      .selectFrom('consumer_partition')
      .select((eb) => [
        'consumer_name',
        eb.fn.min<string | null>(sql`CASE WHEN expired_at IS NULL THEN cursor END`).as('cursor'),
        eb.fn.count<string>('expired_at').as('expired'),
      ])
      .groupBy('consumer_name')
      .execute();
    return rows.map((row) => ({ name: row.consumer_name, cursor: row.cursor, expired: Number(row.expired) > 0 }));
  }

  @GenerateSql({ none: 'a helper: its statements show under the methods that call it' })
  private async withPartitions(
    rows: { name: string; types: string[]; workspaces: string[]; profile_ids: string[]; platforms: string[]; partitions: number; created_at: Date }[],
  ): Promise<StoredConsumer[]> {
    if (rows.length === 0) return [];
    const partitions = await this.database.db
      .selectFrom('consumer_partition')
      .select(['consumer_name', 'partition', 'cursor', 'committed_at', 'last_read_at', 'expired_at'])
      .where(
        'consumer_name',
        'in',
        rows.map((row) => row.name),
      )
      .orderBy('consumer_name')
      .orderBy('partition')
      .execute();
    const byName = new Map<string, ConsumerPartitionState[]>();
    for (const p of partitions) {
      const list = byName.get(p.consumer_name) ?? [];
      list.push(partitionState(p));
      byName.set(p.consumer_name, list);
    }
    return rows.map((row) => ({
      name: row.name,
      types: row.types as ChangeType[],
      workspaces: row.workspaces,
      profileIds: row.profile_ids,
      platforms: row.platforms,
      partitions: row.partitions,
      createdAt: row.created_at,
      partitionStates: byName.get(row.name) ?? [],
    }));
  }
}

const partitionState = (row: {
  partition: number;
  cursor: string;
  committed_at: Date | null;
  last_read_at: Date | null;
  expired_at: Date | null;
}): ConsumerPartitionState => ({
  partition: row.partition,
  cursor: row.cursor,
  committedAt: row.committed_at,
  lastReadAt: row.last_read_at,
  expiredAt: row.expired_at,
});
