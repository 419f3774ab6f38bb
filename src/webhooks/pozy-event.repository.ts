import { Injectable } from '@nestjs/common';
import type { QueryConfig } from 'pg';
import { DatabaseService } from '../database/database.service';
import { MetricsService } from '../metrics/metrics.service';

export interface NewPozyEvent {
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
}

export interface BatchOutcome {
  /** Ids of the events this statement stored; any other id of the batch was stored before. */
  insertedIds: Set<string>;
  /** When the earliest reconcile this batch asked for falls due; null if it asked for none (all joined pending ones). */
  firstRequestDueAt: Date | null;
}

// One statement is one transaction: each new event's reconcile request commits with it, and nothing commits
// unless all of it does. Duplicates (already stored, or delivered concurrently) insert nothing and request
// nothing. Requests throttle per resource: with nothing pending, a read is due now, or one window after the last
// dispatched read; with a read already pending, the event joins it. Rows go in id and key order, so concurrent
// batches take their locks in one order.
const INSERT_EVENTS_AND_REQUESTS = `
WITH input AS (
  SELECT *
    FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::text[], $6::int[], $7::boolean[],
                $8::text[], $9::text[], $10::text[], $12::uuid[])
      AS t(id, type, payload, ts, delivery_id, attempt, test, resource_type, resource_id, request_key, recovered_by)
), inserted AS (
  INSERT INTO pozy_event (id, type, payload, "timestamp", delivery_id, attempt, test, resource_type, resource_id,
                          recovered_by)
  SELECT id, type, payload::jsonb, ts, delivery_id, attempt, test, resource_type, resource_id, recovered_by
    FROM input ORDER BY id
  ON CONFLICT (id) DO NOTHING
  RETURNING id
), requested AS (
  INSERT INTO reconcile_request AS r (key, resource_type, resource_id, due_at, requested_at)
  SELECT DISTINCT ON (i.request_key) i.request_key, i.resource_type, i.resource_id, now(), now()
    FROM input i JOIN inserted USING (id)
   WHERE i.request_key IS NOT NULL
   ORDER BY i.request_key
  ON CONFLICT (key) DO UPDATE
     SET due_at = greatest(now(), r.dispatched_at + $11::int * interval '1 millisecond'), requested_at = now()
   WHERE r.due_at IS NULL
  RETURNING due_at
)
SELECT ARRAY(SELECT id FROM inserted) AS inserted_ids, (SELECT min(due_at) FROM requested) AS first_due_at,
       (SELECT count(*) FROM requested)::int AS requested`;

@Injectable()
export class PozyEventRepository {
  constructor(
    private readonly database: DatabaseService,
    private readonly metrics: MetricsService,
  ) {}

  /**
   * Stores events whose ids are distinct, each once ever, with their reconcile requests, in one transaction.
   * `coalesceWindowMs` is the least time between two reads of one resource; past `timeoutMs` the statement is given
   * up, and its connection freed.
   */
  async insertBatch(events: readonly NewPozyEvent[], coalesceWindowMs: number, timeoutMs: number): Promise<BatchOutcome> {
    const column = <T>(pick: (e: NewPozyEvent) => T) => events.map(pick);
    // pg honours a per-query query_timeout; its types only know the pool-wide one.
    const statement: QueryConfig & { query_timeout: number } = {
      // Named: each connection parses and plans it once, not on every batch.
      name: 'insert_pozy_events',
      // The caller's deadline (ACK_TIMEOUT_MS: Pozy waits 5 s for an answer); past it the events go to the spool.
      query_timeout: timeoutMs,
      text: INSERT_EVENTS_AND_REQUESTS,
      values: [
        column((e) => e.id),
        column((e) => e.type),
        column((e) => e.payloadJson),
        column((e) => e.timestamp),
        column((e) => e.deliveryId),
        column((e) => e.attempt),
        column((e) => e.test),
        column((e) => e.reconcile?.type ?? null),
        column((e) => e.reconcile?.id ?? null),
        column((e) => e.reconcile?.key ?? null),
        coalesceWindowMs,
        column((e) => e.recoveredBy),
      ],
    };
    const { rows } = await this.database.pool.query<{ inserted_ids: string[]; first_due_at: Date | null; requested: number }>(statement);
    const insertedIds = new Set(rows[0].inserted_ids);
    // New events asking for a read that was already pending (or asked for twice in this batch) cost no read of their own.
    const joined = events.filter((e) => e.reconcile && insertedIds.has(e.id)).length - rows[0].requested;
    if (joined > 0) this.metrics.apiCallsSaved.inc({ reason: 'coalesced' }, joined);
    return { insertedIds, firstRequestDueAt: rows[0].first_due_at };
  }
}
