import { Injectable } from '@nestjs/common';
import { type Selectable, sql } from 'kysely';
import { type Db, DatabaseService } from '../database/database.service';
import { precompiled } from '../database/precompiled';
import { milliseconds } from '../database/sql-expressions';
import type { DB } from '../generated/kysely/database';
import { MetricsService } from '../metrics/metrics.service';
import type { ResourceType } from '../common/resources';
import type { WorkspaceId } from '../common/workspace-id';
import { withDeadline } from './ack-deadline';
import { GenerateSql, Sample } from '../database/sql-snapshot';

export interface NewPozyEvent {
  /** The workspace whose webhook path (or delivery log) brought the event: event ids are unique within one. */
  workspaceId: WorkspaceId;
  id: string;
  type: string;
  /** The body exactly as received; PostgreSQL parses it into jsonb. */
  payloadJson: string;
  timestamp: Date;
  deliveryId: string | null;
  attempt: number | null;
  test: boolean;
  /** The resource to read again from Pozy, or null for test and unknown events. */
  reconcile: { key: string; type: string; id: string } | null;
  /** The backfill run that found the event in Pozy's delivery logs; null for a delivery. */
  recoveredBy: string | null;
  /** The receive span's W3C `traceparent`; null when traces are off. */
  traceParent: string | null;
}

/** An event's identity across workspaces: its workspace and its id (a slug holds no `/`). */
export const eventKey = (event: Pick<NewPozyEvent, 'workspaceId' | 'id'>): string => `${event.workspaceId}/${event.id}`;

export interface BatchOutcome {
  /** The eventKey of each event this statement stored; any other event of the batch was stored before. */
  inserted: Set<string>;
  /** When the earliest reconcile this batch asked for falls due; null if it asked for none (all joined pending ones). */
  firstRequestDueAt: Date | null;
}

export interface ResourceEvents {
  /** The latest timestamp of the (non-test) events received for the resource. */
  latest: Date | null;
  /** The type of that event (for a profile, of its latest received): the freshness histogram's label. */
  latestType: string | null;
  /** For a profile: the latest per account id. */
  perAccount: Map<string, Date>;
  /**
   * For a post: when (our clock) the latest event was received, unless that event hints the post may be gone
   * (DELETION_HINTS); a 404 soon after contradicts it. Null: no such event.
   */
  announcedAt: Date | null;
  /** For a profile: per account id, when its latest event was received (every account event says it exists). */
  announcedPerAccount: Map<string, Date>;
}

/** Post events after which a 404 is to be expected: Pozy takes a post's publications down as it deletes it. */
const DELETION_HINTS = ['post.platform.deleted'];

/** One event of a batch as unnest() spreads the batch's columns into rows. */
type BatchRow = Pick<
  Selectable<DB['pozy_event']>,
  'workspace_id' | 'id' | 'type' | 'delivery_id' | 'attempt' | 'test' | 'resource_type' | 'resource_id' | 'recovered_by' | 'trace_parent' | 'copies'
> & {
  /** JSON text; cast to jsonb on insert. */
  payload: string;
  ts: Date;
  request_key: Selectable<DB['reconcile_request']>['key'] | null;
};

type Column<K extends keyof BatchRow> = BatchRow[K][];

/** The receive statement's parameters: one array per column of the batch, and the throttle window. */
interface BatchParams {
  workspaceIds: Column<'workspace_id'>;
  ids: Column<'id'>;
  types: Column<'type'>;
  payloads: Column<'payload'>;
  timestamps: Column<'ts'>;
  deliveryIds: Column<'delivery_id'>;
  attempts: Column<'attempt'>;
  tests: Column<'test'>;
  resourceTypes: Column<'resource_type'>;
  resourceIds: Column<'resource_id'>;
  requestKeys: Column<'request_key'>;
  recoveredBy: Column<'recovered_by'>;
  traceParents: Column<'trace_parent'>;
  copies: Column<'copies'>;
  coalesceWindowMs: number;
}

// One statement is one transaction: each new event's reconcile request commits with it, and nothing commits
// unless all of it does. Duplicates (already stored, or delivered concurrently) add to the stored event's copies
// and request nothing. Requests throttle per resource: with nothing pending, a read is due now, or one window after the last
// dispatched read; with a read already pending, the event joins it. Rows go in id and key order, so concurrent
// batches take their locks in one order.
function insertEventsAndRequests(db: Db, p: BatchParams) {
  const batch =
    sql<BatchRow>`unnest(${p.workspaceIds}::text[], ${p.ids}::text[], ${p.types}::text[], ${p.payloads}::text[], ${p.timestamps}::timestamptz[],
    ${p.deliveryIds}::text[], ${p.attempts}::int[], ${p.tests}::boolean[], ${p.resourceTypes}::text[], ${p.resourceIds}::text[],
    ${p.requestKeys}::text[], ${p.recoveredBy}::uuid[], ${p.traceParents}::text[], ${p.copies}::int[])`.as<'t'>(
      sql`t(workspace_id, id, type, payload, ts, delivery_id, attempt, test, resource_type, resource_id, request_key, recovered_by, trace_parent, copies)`,
    );
  return db
    .with('input', (db) => db.selectFrom(batch).selectAll())
    .with('inserted', (db) =>
      db
        .insertInto('pozy_event')
        .columns([
          'workspace_id',
          'id',
          'type',
          'payload',
          'timestamp',
          'delivery_id',
          'attempt',
          'test',
          'resource_type',
          'resource_id',
          'recovered_by',
          'trace_parent',
          'copies',
        ])
        .expression(
          db
            .selectFrom('input')
            .select((eb) => [
              'workspace_id',
              'id',
              'type',
              eb.cast('payload', 'jsonb').as('payload'),
              'ts',
              'delivery_id',
              'attempt',
              'test',
              'resource_type',
              'resource_id',
              'recovered_by',
              'trace_parent',
              'copies',
            ])
            .orderBy('workspace_id')
            .orderBy('id'),
        )
        // A duplicate only counts its copies (a resource's timeline shows them); xmax is 0 exactly for a new row.
        .onConflict((oc) =>
          oc
            .columns(['workspace_id', 'id'])
            .doUpdateSet((eb) => ({ copies: sql<number>`${eb.ref('pozy_event.copies')} + ${eb.ref('excluded.copies')}` })),
        )
        .returning(['workspace_id', 'id', sql<boolean>`xmax = 0`.as('fresh')]),
    )
    .with('requested', (db) =>
      db
        .insertInto('reconcile_request')
        .columns(['workspace_id', 'key', 'resource_type', 'resource_id', 'due_at', 'requested_at'])
        .expression(
          db
            .selectFrom('input as i')
            .innerJoin('inserted', (join) =>
              join
                .onRef('inserted.workspace_id', '=', 'i.workspace_id')
                .onRef('inserted.id', '=', 'i.id')
                .on(sql<boolean>`inserted.fresh`),
            )
            .distinctOn(['i.workspace_id', 'i.request_key'])
            .select((eb) => [
              'i.workspace_id',
              'i.request_key',
              'i.resource_type',
              'i.resource_id',
              eb.fn('now').as('due_at'),
              eb.fn('now').as('requested_at'),
            ])
            .where('i.request_key', 'is not', null)
            .orderBy('i.workspace_id')
            .orderBy('i.request_key'),
        )
        .onConflict((oc) =>
          oc
            .columns(['workspace_id', 'key'])
            .doUpdateSet((eb) => ({
              due_at: eb.fn('greatest', [
                eb.fn('now'),
                sql<Date>`${eb.ref('reconcile_request.dispatched_at')} + ${milliseconds(p.coalesceWindowMs, 'int')}`,
              ]),
              requested_at: eb.fn('now'),
            }))
            .where('reconcile_request.due_at', 'is', null),
        )
        .returning('due_at'),
    )
    .selectNoFrom((eb) => [
      sql<string[]>`ARRAY(${eb
        .selectFrom('inserted')
        .where(sql<boolean>`fresh`)
        .select(sql<string>`workspace_id || '/' || id`.as('key'))})`.as('inserted_keys'),
      eb
        .selectFrom('requested')
        .select((eb) => eb.fn.min('due_at').as('first'))
        .as('first_due_at'),
      eb
        .selectFrom('requested')
        .select((eb) => eb.cast<number>(eb.fn.countAll(), 'integer').as('n'))
        .as('requested'),
    ]);
}

/**
 * The receive statement, compiled once: its text does not depend on the batch, only its parameters do. Building and
 * compiling it per batch would cost the receive path about as much client CPU again as executing it (`npm run bench`
 * shows the receive path's throughput). Prepared: each connection parses and plans it once, and a batch then sends
 * only its parameters.
 */
const INSERT_EVENTS_AND_REQUESTS = precompiled(insertEventsAndRequests, { prepare: 'pozy_event_insert_batch' });

/** pozy_event, and the reconcile requests its receive statement writes with the events (one aggregate). */
@Injectable()
export class PozyEventRepository {
  constructor(
    private readonly database: DatabaseService,
    private readonly metrics: MetricsService,
  ) {}

  /**
   * Stores events whose ids are distinct, each once ever, with their reconcile requests, in one transaction.
   * `coalesceWindowMs` is the least time between two reads of one resource. Past `timeoutMs` (the caller's deadline,
   * ACK_TIMEOUT_MS: Pozy waits 5 s for an answer) it rejects with AckTimeoutError and the events go to the spool; the
   * statement is not waited for any more, and commits or fails on its own (a redelivery or the spool's retry of an
   * event it did store is a duplicate).
   */
  @GenerateSql({ params: [[Sample.EVENT], Sample.NUMBER, Sample.NUMBER] })
  async insertBatch(
    events: readonly NewPozyEvent[],
    coalesceWindowMs: number,
    timeoutMs: number,
    /** Deliveries of each event in this batch (default one each): a stored event's copies grow by as many. */
    copies?: readonly number[],
  ): Promise<BatchOutcome> {
    const column = <T>(pick: (e: NewPozyEvent) => T) => events.map(pick);
    const params: BatchParams = {
      workspaceIds: column((e) => e.workspaceId),
      ids: column((e) => e.id),
      types: column((e) => e.type),
      payloads: column((e) => e.payloadJson),
      timestamps: column((e) => e.timestamp),
      deliveryIds: column((e) => e.deliveryId),
      attempts: column((e) => e.attempt),
      tests: column((e) => e.test),
      resourceTypes: column((e) => e.reconcile?.type ?? null),
      resourceIds: column((e) => e.reconcile?.id ?? null),
      requestKeys: column((e) => e.reconcile?.key ?? null),
      recoveredBy: column((e) => e.recoveredBy),
      traceParents: column((e) => e.traceParent),
      copies: events.map((_, i) => copies?.[i] ?? 1),
      coalesceWindowMs,
    };
    const statement = INSERT_EVENTS_AND_REQUESTS(this.database.db, params);
    const row = (await withDeadline(statement, timeoutMs)).rows[0];
    const inserted = new Set(row.inserted_keys);
    // New events asking for a read that was already pending (or asked for twice in this batch) cost no read of their own.
    const joined = events.filter((e) => e.reconcile && inserted.has(eventKey(e))).length - (row.requested ?? 0);
    if (joined > 0) this.metrics.apiCallsSaved.inc({ reason: 'coalesced' }, joined);
    return { inserted, firstRequestDueAt: row.first_due_at ?? null };
  }

  /** The latest (non-test) event times of a resource, which tell whether its last read already reflects them. */
  @GenerateSql({ params: [Sample.WORKSPACE, 'post', Sample.UUID] })
  async resourceEvents(workspaceId: WorkspaceId, type: ResourceType, id: string): Promise<ResourceEvents> {
    const ofResource = this.database.db
      .selectFrom('pozy_event')
      .where('workspace_id', '=', workspaceId)
      .where('resource_type', '=', type)
      .where('resource_id', '=', id)
      .where((eb) => eb.not(eb.ref('test')));
    if (type === 'post') {
      // The latest event, from the (workspace_id, resource_type, resource_id, timestamp) index.
      const row = await ofResource
        .select(['timestamp', 'type', 'received_at'])
        .orderBy('timestamp', 'desc')
        .orderBy('received_at', 'desc')
        .limit(1)
        .executeTakeFirst();
      const announcedAt = row && !DELETION_HINTS.includes(row.type) ? row.received_at : null;
      return { latest: row?.timestamp ?? null, latestType: row?.type ?? null, perAccount: new Map(), announcedAt, announcedPerAccount: new Map() };
    }
    // payload is typed `unknown`, which Kysely's JSON path builder cannot walk.
    const accountId = sql<string | null>`${sql.ref('payload')}->'account'->>'accountId'`;
    const rows = await ofResource
      .select((eb) => [
        accountId.as('account_id'),
        eb.fn.max('timestamp').as('latest'),
        eb.fn.max('received_at').as('received'),
        sql<string>`(array_agg(${eb.ref('type')} ORDER BY ${eb.ref('received_at')} DESC))[1]`.as('type'),
      ])
      .groupBy(accountId)
      .execute();
    const perAccount = new Map<string, Date>();
    const announcedPerAccount = new Map<string, Date>();
    for (const row of rows) {
      if (!row.account_id) continue;
      perAccount.set(row.account_id, row.latest);
      announcedPerAccount.set(row.account_id, row.received);
    }
    const latest = rows.reduce<Date | null>((max, r) => (max && max >= r.latest ? max : r.latest), null);
    const newest = rows.reduce<(typeof rows)[number] | null>((top, r) => (top && top.received >= r.received ? top : r), null);
    return { latest, latestType: newest?.type ?? null, perAccount, announcedAt: null, announcedPerAccount };
  }

  /**
   * The receive spans' `traceparent`s of the resource's events received since its last read began (those a
   * reconcile now serves), oldest first, at most `limit`. Walks the resource's index from its newest event; a day's
   * margin on Pozy's timestamps bounds the walk for a resource with a long history.
   */
  @GenerateSql({ params: [Sample.WORKSPACE, 'post', Sample.UUID, Sample.STRING, Sample.NUMBER] })
  async traceParentsSince(workspaceId: WorkspaceId, type: ResourceType, id: string, key: string, limit: number): Promise<string[]> {
    const db = this.database.db;
    // No request row, or no read yet: every event of the resource is served.
    const lastRead = sql<Date>`coalesce(${db
      .selectFrom('reconcile_request')
      .select('last_read_at')
      .where('workspace_id', '=', workspaceId)
      .where('key', '=', key)}, '-infinity'::timestamptz)`;
    const rows = await db
      .selectFrom('pozy_event')
      .select(['trace_parent', 'received_at'])
      .where('workspace_id', '=', workspaceId)
      .where('resource_type', '=', type)
      .where('resource_id', '=', id)
      .where('trace_parent', 'is not', null)
      .where((eb) => eb.and([eb('received_at', '>', lastRead), eb('timestamp', '>', sql<Date>`${lastRead} - interval '1 day'`)]))
      .orderBy('timestamp', 'desc')
      .limit(limit)
      .execute();
    return rows
      .sort((a, b) => a.received_at.getTime() - b.received_at.getTime())
      .flatMap((row) => (row.trace_parent === null ? [] : [row.trace_parent]));
  }

  /**
   * Retention: deletes up to `limit` events received before `cutoff`; answers how many. Found through the BRIN index
   * on received_at. A redelivery of a pruned event is stored again as new: what EVENT_RETENTION_DAYS trades for a
   * bounded table. SKIP LOCKED leaves an event being written right now to the next run.
   */
  @GenerateSql({ params: [Sample.DATE, Sample.NUMBER] })
  async pruneBefore(cutoff: Date, limit: number, db: Db = this.database.db): Promise<number> {
    const result = await db
      .deleteFrom('pozy_event')
      .using(
        db.selectFrom('pozy_event').select(['workspace_id', 'id']).where('received_at', '<', cutoff).limit(limit).forUpdate().skipLocked().as('old'),
      )
      .whereRef('pozy_event.workspace_id', '=', 'old.workspace_id')
      .whereRef('pozy_event.id', '=', 'old.id')
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
