import { Expression, ExpressionBuilder, InsertQueryBuilder, Selectable, sql, SqlBool, UpdateQueryBuilder } from 'kysely';
import type { Db } from '../database/database.service';
import type { DB } from '../generated/kysely/database';
import type { WorkspaceId } from '../common/workspace-id';
import { fromExcluded } from './whole-object';

/** The mirrored tables: each row the whole resource as one read of Pozy answered it, under the same guard. */
export type MirrorTable = 'post' | 'account';

/** The column that marks a resource gone from Pozy (the row stays). */
type GoneColumn<T extends MirrorTable> = T extends 'post' ? 'deleted_at' : 'removed_at';

/** A column of the table's row. */
type Column<T extends MirrorTable> = keyof DB[T] & string;

/** The bookkeeping columns both tables have alike: the guarded upsert writes them the same way in each. */
type Bookkeeping = 'workspace_id' | 'id' | 'last_event_at' | 'synced_at' | 'read_started_at' | 'read_id' | 'sequence' | 'changed_by';

// Fails the build if the two tables' bookkeeping columns ever differ in type.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const bookkeepingAlike: Same<Pick<DB['post'], Bookkeeping>, Pick<DB['account'], Bookkeeping>> = true;
void bookkeepingAlike;

/** The upsert's expressions: the stored row under its table's name, the row the statement tried to insert as `excluded`. */
export type Upsert<T extends MirrorTable> = ExpressionBuilder<DB & { excluded: DB[T] }, T | 'excluded'>;

/** What differs between the two tables' guarded upserts. */
export interface GuardedTable<T extends MirrorTable> {
  table: T;
  gone: GoneColumn<T>;
  /** The whole mirrored resource, bookkeeping aside: a difference in any of these (or in being gone) is a change. */
  state: readonly Column<T>[];
  /** Every column a read gives: the state, and what derives from it. */
  fromRead: readonly Column<T>[];
  /** When the read may replace the stored row. */
  guard: (eb: Upsert<T>) => Expression<SqlBool>;
}

/** A guarded write of the table's rows, returning the rows it wrote and whether it inserted each. */
export type WrittenQuery<T extends MirrorTable> =
  InsertQueryBuilder<DB, T, Selectable<DB[T]> & { inserted: boolean }> | UpdateQueryBuilder<DB, T, T, Selectable<DB[T]> & { inserted: boolean }>;

/** Whether the statement inserted the row (rather than updating it). */
export const inserted = (table: MirrorTable) => sql<boolean>`${sql.ref(`${table}.xmax`)} = 0`.as('inserted');

/** Any difference in the whole resource, being gone included, is a change to notify. */
const differs = <T extends MirrorTable>(of: GuardedTable<T>, eb: Upsert<T>) => {
  const stored = [...of.state.map((column) => sql.ref(`${of.table}.${column}`)), eb(sql.ref(`${of.table}.${of.gone}`), 'is', null)];
  const read = [...of.state.map((column) => sql.ref(`excluded.${column}`)), sql.lit(true)];
  return sql<boolean>`(${sql.join(stored)}) IS DISTINCT FROM (${sql.join(read)})`;
};

/** Rows of the table, from one JSON parameter whatever their number. */
export const rowsFromJson = <T extends MirrorTable>(table: T, rows: ReadonlyArray<object>) =>
  sql<Selectable<DB[T]>>`jsonb_populate_recordset(NULL::${sql.table(table)}, ${JSON.stringify(rows)}::jsonb)`.as('input');

/** What one read of Pozy wrote the rows with. */
export interface UpsertRead {
  readId: string;
  startedAt: Date;
}

/**
 * The guarded upsert of the rows one read answered, in one statement: each row inserted, or replacing the stored one
 * when `guard` allows, its `last_event_at` the latest of both, its `sequence` raised and `changed_by` set to the read
 * only when the whole resource differs (a re-read of the same state writes, yet changes nothing). The rows go in as one
 * JSON parameter (`jsonb_populate_recordset` of the table's row type), whatever their number, in id order: one lock
 * order for every writer, so two pages or a page and a job never deadlock.
 *
 * Built on the shared bookkeeping columns and the table's own (GuardedTable<T>, checked per table); the builder is
 * typed as post's, whose bookkeeping columns the account table has alike (bookkeepingAlike).
 */
export function guardedUpsert<T extends MirrorTable>(
  db: Db,
  of: GuardedTable<T>,
  workspaceId: WorkspaceId,
  rows: ReadonlyArray<object>,
  read: UpsertRead,
): WrittenQuery<T> {
  const same = of as unknown as GuardedTable<'post'>;
  const table = same.table;
  const gone = same.gone;
  const input = rowsFromJson(table, rows);
  const written = db
    .insertInto(table)
    .columns(['workspace_id', 'id', ...same.fromRead, 'last_event_at', 'synced_at', 'read_started_at', 'read_id', gone, 'sequence', 'changed_by'])
    .expression((eb) =>
      eb
        .selectFrom(input)
        .select((eb) => [
          eb.val(workspaceId).as('workspace_id'),
          'input.id',
          ...same.fromRead.map((name) => `input.${name}` as const),
          'input.last_event_at',
          eb.fn<Date>('now').as('synced_at'),
          eb.cast<Date>(eb.val(read.startedAt), 'timestamptz').as('read_started_at'),
          eb.cast<string>(eb.val(read.readId), 'uuid').as('read_id'),
          eb.lit(null).as(gone),
          eb.lit(1).as('sequence'),
          eb.cast<string>(eb.val(read.readId), 'uuid').as('changed_by'),
        ])
        .orderBy('input.id'),
    )
    .onConflict((oc) =>
      oc
        .columns(['workspace_id', 'id'])
        .doUpdateSet((eb) => {
          const changed = differs(same, eb);
          return {
            ...fromExcluded<Selectable<DB['post']>>()(same.fromRead),
            last_event_at: eb.fn('greatest', [`${table}.last_event_at` as const, 'excluded.last_event_at']),
            synced_at: eb.fn('now'),
            read_started_at: eb.ref('excluded.read_started_at'),
            read_id: eb.ref('excluded.read_id'),
            [gone]: eb.lit(null),
            sequence: eb(`${table}.sequence` as const, '+', eb.case().when(changed).then(1).else(0).end()),
            changed_by: eb
              .case()
              .when(changed)
              .then(eb.ref('excluded.read_id'))
              .else(eb.ref(`${table}.changed_by` as const))
              .end(),
          };
        })
        .where(same.guard),
    )
    .returningAll()
    .returning(inserted(of.table));
  return written as unknown as WrittenQuery<T>;
}

/** A row of a write's `written` CTE: the row as the write left it, and whether it inserted it. */
export type WrittenRow<T extends MirrorTable> = Selectable<DB[T]> & { inserted: boolean };
