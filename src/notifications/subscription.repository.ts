import { Injectable } from '@nestjs/common';
import { DatabaseService } from '../database/database.service';
import type { Subscription as SubscriptionRow } from '../generated/prisma/client';
import { oneOf } from './known-values';
import { now } from './notification-expressions';
import { NOTIFICATION_TYPES, NotificationType } from './outbox-sql';

/** A subscription as the admin endpoints answer it (never with its secret, except once when created). */
export type Subscription = Pick<SubscriptionRow, 'id' | 'url' | 'description' | 'profileIds' | 'platforms' | 'active' | 'createdAt'> & {
  eventTypes: NotificationType[];
  health: SubscriptionHealth;
};

export type SubscriptionHealth = {
  /** `inactive` (switched off), `paused` (the circuit breaker), `failing` (every attempt fails, lately) or `healthy`. */
  state: 'inactive' | 'paused' | 'failing' | 'healthy';
  /** Its notifications waiting to be sent. */
  pending: number;
  /** Its notifications in the dead-letter queue. */
  deadLetters: number;
} & Pick<SubscriptionRow, 'failingSince' | 'pausedAt' | 'pausedReason' | 'lastSuccessAt' | 'lastFailureAt' | 'lastError'>;

export type NewSubscription = Pick<SubscriptionRow, 'url' | 'secret' | 'profileIds' | 'platforms' | 'description' | 'active'> & {
  eventTypes: NotificationType[];
};

export type SubscriptionChanges = Partial<Omit<NewSubscription, 'secret'>>;

/** Per subscription, its notifications pending and dead (counted through notification_unsettled_idx). */
type Backlog = Map<string, { pending: number; dead: number }>;

function toSubscription(row: SubscriptionRow, backlog: Backlog): Subscription {
  const counts = backlog.get(row.id);
  return {
    id: row.id,
    url: row.url,
    description: row.description,
    eventTypes: row.eventTypes.map((type) => oneOf(NOTIFICATION_TYPES, type, 'notification type')),
    profileIds: row.profileIds,
    platforms: row.platforms,
    active: row.active,
    createdAt: row.createdAt,
    health: {
      state: !row.active ? 'inactive' : row.pausedAt ? 'paused' : row.failingSince ? 'failing' : 'healthy',
      pending: counts?.pending ?? 0,
      deadLetters: counts?.dead ?? 0,
      failingSince: row.failingSince,
      pausedAt: row.pausedAt,
      pausedReason: row.pausedReason,
      lastSuccessAt: row.lastSuccessAt,
      lastFailureAt: row.lastFailureAt,
      lastError: row.lastError,
    },
  };
}

@Injectable()
export class SubscriptionRepository {
  constructor(private readonly database: DatabaseService) {}

  async create(id: string, subscription: NewSubscription): Promise<Subscription> {
    await this.database.prisma.subscription.create({ data: { id, ...subscription } });
    return (await this.get(id))!;
  }

  async list(): Promise<Subscription[]> {
    const rows = await this.database.prisma.subscription.findMany({
      where: { deletedAt: null },
      orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
    });
    const backlog = await this.backlog(rows.map((r) => r.id));
    return rows.map((row) => toSubscription(row, backlog));
  }

  async get(id: string): Promise<Subscription | undefined> {
    const row = await this.database.prisma.subscription.findFirst({ where: { id, deletedAt: null } });
    return row ? toSubscription(row, await this.backlog([id])) : undefined;
  }

  /** Only the fields given change; answers whether the subscription exists. */
  async update(id: string, changes: SubscriptionChanges): Promise<boolean> {
    // A field absent or null stays as it is.
    const { count } = await this.database.prisma.subscription.updateMany({
      where: { id, deletedAt: null },
      data: {
        url: changes.url ?? undefined,
        eventTypes: changes.eventTypes ?? undefined,
        profileIds: changes.profileIds ?? undefined,
        platforms: changes.platforms ?? undefined,
        description: changes.description ?? undefined,
        active: changes.active ?? undefined,
      },
    });
    return count > 0;
  }

  /**
   * Marks it deleted and cancels what it had pending, in one statement; answers how many were cancelled, or undefined
   * if none such.
   */
  async delete(id: string): Promise<number | undefined> {
    const row = await this.database.db
      .with('deleted', (db) =>
        db.updateTable('subscription').set({ deleted_at: now(), active: false }).where('id', '=', id).where('deleted_at', 'is', null).returning('id'),
      )
      .with('cancelled', (db) =>
        db
          .updateTable('notification')
          .set({ state: 'cancelled', next_attempt_at: null })
          .where('subscription_id', 'in', db.selectFrom('deleted').select('deleted.id'))
          .where('state', '=', 'pending')
          .returning('notification.id'),
      )
      .selectFrom('deleted')
      .select((eb) => eb.selectFrom('cancelled').select(eb.cast<number>(eb.fn.countAll(), 'integer').as('count')).as('cancelled'))
      .executeTakeFirst();
    return row ? (row.cancelled ?? 0) : undefined;
  }

  /**
   * Closes the circuit breaker: what waited is due now (the database's clock, which the deliverer's claims compare
   * with), in one statement. Answers whether the subscription exists.
   */
  async resume(id: string): Promise<boolean> {
    const rows = await this.database.db
      .with('resumed', (db) =>
        db
          .updateTable('subscription')
          .set({ paused_at: null, paused_reason: null, failing_since: null })
          .where('id', '=', id)
          .where('deleted_at', 'is', null)
          .returning('id'),
      )
      .with('due', (db) =>
        db
          .updateTable('notification')
          .set({ next_attempt_at: now(), failing_since: null })
          .where('subscription_id', 'in', db.selectFrom('resumed').select('resumed.id'))
          .where('state', '=', 'pending'),
      )
      .selectFrom('resumed')
      .select('resumed.id')
      .execute();
    return rows.length > 0;
  }

  private async backlog(ids: string[]): Promise<Backlog> {
    const backlog: Backlog = new Map();
    if (ids.length === 0) return backlog;
    const groups = await this.database.prisma.notification.groupBy({
      by: ['subscriptionId', 'state'],
      where: { subscriptionId: { in: ids }, state: { in: ['pending', 'dead'] } },
      _count: { _all: true },
    });
    for (const { subscriptionId, state, _count } of groups) {
      const counts = backlog.get(subscriptionId) ?? { pending: 0, dead: 0 };
      if (state === 'pending') counts.pending = _count._all;
      else counts.dead = _count._all;
      backlog.set(subscriptionId, counts);
    }
    return backlog;
  }
}
