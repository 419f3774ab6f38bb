import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { Expression, RawBuilder, sql } from 'kysely';
import { boundedText } from '../common/bounded-text';
import { DatabaseService, type Db } from '../database/database.service';
import type { DeadLetter as DeadLetterRow } from '../generated/prisma/client';
import { RESOURCE_TYPES } from '../common/resources';
import { ReconcilePayload } from '../queue/tasks';
import { GenerateSql, Sample } from '../database/sql-snapshot';

/** What a replay of a reconcile letter reads again. */
export type ReconcileLetterPayload = Pick<ReconcilePayload, 'resource' | 'id'>;

/** A notification letter's notification (written with the attempt that gave up on it: notification.repository.ts). */
export interface NotificationLetterPayload {
  notificationId: string;
  subscriptionId: string;
  type: string;
  sequence: number;
}

/**
 * A notification letter's notification id, for the statements that settle letters together with their notification
 * (notifications/: a replay marks its letter replayed, a newer version delivered resolves it).
 */
export const letterNotificationId = (payload: Expression<unknown>): RawBuilder<string> =>
  sql<string>`${payload} ->> ${sql.lit<keyof NotificationLetterPayload>('notificationId')}`;

/** A letter's kind and the payload (JSON, as stored) that kind writes. */
export type DeadLetterSubject = { kind: 'reconcile'; payload: ReconcileLetterPayload } | { kind: 'notification'; payload: NotificationLetterPayload };

export type DeadLetterKind = DeadLetterSubject['kind'];

type LetterFields = Omit<DeadLetterRow, 'queue' | 'kind' | 'payload'> & { queue: 'delivery' };

/** A letter of the delivery queue, its payload read by its kind: what a replay works from. */
export type DeadLetter = LetterFields & DeadLetterSubject;

/** A letter as listed: its payload as stored, whatever it holds. */
export type ListedDeadLetter = LetterFields & { kind: DeadLetterKind; payload: unknown };

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

const isReconcilePayload = (value: unknown): value is ReconcileLetterPayload =>
  isRecord(value) && RESOURCE_TYPES.some((type) => type === value.resource) && typeof value.id === 'string';

const isNotificationPayload = (value: unknown): value is NotificationLetterPayload =>
  isRecord(value) &&
  typeof value.notificationId === 'string' &&
  typeof value.subscriptionId === 'string' &&
  typeof value.type === 'string' &&
  typeof value.sequence === 'number';

function listed(row: DeadLetterRow): ListedDeadLetter {
  if (row.queue !== 'delivery') throw new Error(`Dead letter ${row.id} is in queue ${row.queue}, not delivery`);
  if (row.kind !== 'reconcile' && row.kind !== 'notification') throw new Error(`Dead letter ${row.id} is of an unknown kind, ${row.kind}`);
  return { ...row, queue: row.queue, kind: row.kind };
}

function typed(row: DeadLetterRow): DeadLetter {
  const letter = listed(row);
  if (letter.kind === 'reconcile' && isReconcilePayload(row.payload)) return { ...letter, kind: 'reconcile', payload: row.payload };
  if (letter.kind === 'notification' && isNotificationPayload(row.payload)) return { ...letter, kind: 'notification', payload: row.payload };
  throw new Error(`Dead letter ${row.id}: its payload is not what a ${row.kind} letter holds`);
}

/** A row's columns under the model's (camelCase) field names. */
const LETTER_COLUMNS = [
  'workspace_id as workspaceId',
  'id',
  'queue',
  'kind',
  'resource_key as resourceKey',
  'payload',
  'reason',
  'error',
  'attempts',
  'first_failure_at as firstFailureAt',
  'last_failure_at as lastFailureAt',
  'created_at as createdAt',
  'replayed_at as replayedAt',
  'replay_count as replayCount',
  'resolved_at as resolvedAt',
  'resolution',
] as const;

/** jsonb as pg parsed it, which the Prisma row type calls JsonValue. */
const asRow = <T extends { payload: unknown }>(row: T) => ({ ...row, payload: row.payload as DeadLetterRow['payload'] });

@Injectable()
export class DeadLetterRepository {
  constructor(private readonly database: DatabaseService) {}

  /** A reconcile given up on. (Notification letters are written with the attempt that gave up: notification.repository.ts.) */
  @GenerateSql({
    params: [
      {
        workspaceId: Sample.WORKSPACE,
        resourceKey: `post:${Sample.STRING}`,
        reason: 'unreachable',
        error: Sample.STRING,
        attempts: 3,
        firstFailureAt: Sample.DATE,
        payload: { resource: 'post', id: Sample.STRING },
      },
    ],
  })
  async addReconcile(
    letter: Pick<DeadLetter, 'workspaceId' | 'resourceKey' | 'reason' | 'error' | 'attempts' | 'firstFailureAt'> & {
      payload: ReconcileLetterPayload;
    },
  ): Promise<string> {
    const id = randomUUID();
    await this.database.db
      .insertInto('dead_letter')
      .values({
        workspace_id: letter.workspaceId,
        id,
        queue: 'delivery',
        kind: 'reconcile',
        resource_key: letter.resourceKey,
        payload: JSON.stringify(letter.payload),
        reason: letter.reason,
        error: boundedText(letter.error),
        attempts: letter.attempts,
        first_failure_at: letter.firstFailureAt,
        // The database's clock, which stamped the first failure (reconcile_request.failing_since) too.
        last_failure_at: sql<Date>`now()`,
      })
      .execute();
    return id;
  }

  /** Newest first; in the caller's snapshot when it passes one (the status page reads them with its figures). */
  @GenerateSql({ params: [Sample.NUMBER] })
  async list(limit: number, db: Db = this.database.db): Promise<ListedDeadLetter[]> {
    const rows = await db
      .selectFrom('dead_letter')
      .select(LETTER_COLUMNS)
      .where('queue', '=', 'delivery')
      .orderBy('created_at', 'desc')
      .orderBy('id')
      .limit(limit)
      .execute();
    return rows.map((row) => listed(asRow(row)));
  }

  @GenerateSql({ params: [Sample.UUID] })
  async get(id: string): Promise<DeadLetter | undefined> {
    const row = await this.database.db.selectFrom('dead_letter').select(LETTER_COLUMNS).where('id', '=', id).executeTakeFirst();
    return row ? typed(asRow(row)) : undefined;
  }

  /** How many letters are neither replayed nor resolved (created up to `upTo`): what a bulk replay takes. */
  @GenerateSql({ params: [] })
  async countUnreplayed(upTo?: Date): Promise<number> {
    let query = this.database.db
      .selectFrom('dead_letter')
      .select((eb) => eb.cast<number>(eb.fn.countAll(), 'integer').as('n'))
      .where('queue', '=', 'delivery')
      .where('replayed_at', 'is', null)
      .where('resolved_at', 'is', null);
    if (upTo) query = query.where('created_at', '<=', upTo);
    return (await query.executeTakeFirstOrThrow()).n;
  }

  /**
   * The next `limit` letters neither replayed nor resolved, oldest first, after `after` in (created_at, id) order and
   * created up to `upTo`: a bulk replay's batch, read by keyset (dead_letter_replay_idx), so a batch costs what it
   * holds and a letter left as it is (skipped) is not met again.
   */
  @GenerateSql({ params: [null, Sample.DATE, Sample.NUMBER] })
  async unreplayedPage(after: Pick<DeadLetter, 'createdAt' | 'id'> | null, upTo: Date, limit: number): Promise<DeadLetter[]> {
    const page = await this.database.db
      .selectFrom('dead_letter')
      .select('id')
      .where('queue', '=', 'delivery')
      .where('replayed_at', 'is', null)
      .where('resolved_at', 'is', null)
      .where('created_at', '<=', upTo)
      .$if(after !== null, (qb) => qb.where((eb) => eb(eb.refTuple('created_at', 'id'), '>', eb.tuple(after!.createdAt, after!.id))))
      .orderBy('created_at')
      .orderBy('id')
      .limit(limit)
      .execute();
    if (page.length === 0) return [];
    const rows = await this.database.db
      .selectFrom('dead_letter')
      .select(LETTER_COLUMNS)
      .where(
        'id',
        'in',
        page.map((r) => r.id),
      )
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map((row) => typed(asRow(row)));
  }

  @GenerateSql({ params: [Sample.UUID] })
  async markReplayed(id: string): Promise<void> {
    await this.database.db
      .updateTable('dead_letter')
      .set((eb) => ({ replayed_at: sql<Date>`now()`, replay_count: eb('replay_count', '+', 1) }))
      .where('id', '=', id)
      .execute();
  }

  /**
   * Retention: deletes up to `limit` letters replayed or resolved before `cutoff`; answers how many. Picked by primary
   * key with SKIP LOCKED, so a letter being replayed right now is left to the next batch.
   */
  @GenerateSql({ params: [Sample.DATE, Sample.NUMBER] })
  async pruneBefore(cutoff: Date, limit: number): Promise<number> {
    const { numDeletedRows } = await this.database.db
      .deleteFrom('dead_letter')
      .where('id', 'in', (eb) =>
        eb
          .selectFrom('dead_letter')
          .select('id')
          .where((eb) => eb(eb.fn.coalesce('replayed_at', 'resolved_at'), '<', cutoff))
          .limit(limit)
          .forUpdate()
          .skipLocked(),
      )
      .executeTakeFirst();
    return Number(numDeletedRows);
  }
}
