import { Injectable } from '@nestjs/common';
import { DatabaseService } from '../database/database.service';
import { NotificationType } from './outbox-sql';

/** A subscription as the admin endpoints answer it (never with its secret, except once when created). */
export interface Subscription {
  id: string;
  url: string;
  description: string | null;
  eventTypes: NotificationType[];
  profileIds: string[];
  platforms: string[];
  active: boolean;
  createdAt: Date;
  health: SubscriptionHealth;
}

export interface SubscriptionHealth {
  /** `inactive` (switched off), `paused` (the circuit breaker), `failing` (every attempt fails, lately) or `healthy`. */
  state: 'inactive' | 'paused' | 'failing' | 'healthy';
  pending: number;
  deadLetters: number;
  failingSince: Date | null;
  pausedAt: Date | null;
  pausedReason: string | null;
  lastSuccessAt: Date | null;
  lastFailureAt: Date | null;
  lastError: string | null;
}

export interface NewSubscription {
  url: string;
  secret: string;
  eventTypes: NotificationType[];
  profileIds: string[];
  platforms: string[];
  description: string | null;
  active: boolean;
}

export type SubscriptionChanges = Partial<Omit<NewSubscription, 'secret'>>;

const SELECT = `
SELECT s.id, s.url, s.description, s.event_types AS "eventTypes", s.profile_ids AS "profileIds", s.platforms,
       s.active, s.created_at AS "createdAt",
       json_build_object(
         'state', CASE WHEN NOT s.active THEN 'inactive' WHEN s.paused_at IS NOT NULL THEN 'paused'
                       WHEN s.failing_since IS NOT NULL THEN 'failing' ELSE 'healthy' END,
         'pending', (SELECT count(*) FROM notification n WHERE n.subscription_id = s.id AND n.state = 'pending'),
         'deadLetters', (SELECT count(*) FROM notification n WHERE n.subscription_id = s.id AND n.state = 'dead'),
         'failingSince', s.failing_since, 'pausedAt', s.paused_at, 'pausedReason', s.paused_reason,
         'lastSuccessAt', s.last_success_at, 'lastFailureAt', s.last_failure_at, 'lastError', s.last_error
       ) AS health
  FROM subscription s
 WHERE s.deleted_at IS NULL`;

interface Row extends Omit<Subscription, 'health'> {
  health: Record<keyof SubscriptionHealth, unknown>;
}

const date = (value: unknown): Date | null => (value === null ? null : new Date(value as string));
const toSubscription = ({ health, ...row }: Row): Subscription => ({
  ...row,
  health: {
    state: health.state as SubscriptionHealth['state'],
    pending: Number(health.pending),
    deadLetters: Number(health.deadLetters),
    failingSince: date(health.failingSince),
    pausedAt: date(health.pausedAt),
    pausedReason: health.pausedReason as string | null,
    lastSuccessAt: date(health.lastSuccessAt),
    lastFailureAt: date(health.lastFailureAt),
    lastError: health.lastError as string | null,
  },
});

@Injectable()
export class SubscriptionRepository {
  constructor(private readonly database: DatabaseService) {}

  async create(id: string, subscription: NewSubscription): Promise<Subscription> {
    await this.database.pool.query(
      `INSERT INTO subscription (id, url, secret, event_types, profile_ids, platforms, description, active)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [id, subscription.url, subscription.secret, subscription.eventTypes, subscription.profileIds, subscription.platforms,
        subscription.description, subscription.active],
    );
    return (await this.get(id))!;
  }

  async list(): Promise<Subscription[]> {
    const { rows } = await this.database.pool.query<Row>(`${SELECT} ORDER BY s.created_at, s.id`);
    return rows.map(toSubscription);
  }

  async get(id: string): Promise<Subscription | undefined> {
    const { rows } = await this.database.pool.query<Row>(`${SELECT} AND s.id = $1`, [id]);
    return rows[0] && toSubscription(rows[0]);
  }

  /** Only the fields given change; answers whether the subscription exists. */
  async update(id: string, changes: SubscriptionChanges): Promise<boolean> {
    const { rowCount } = await this.database.pool.query(
      `UPDATE subscription
          SET url = coalesce($2, url), event_types = coalesce($3, event_types), profile_ids = coalesce($4, profile_ids),
              platforms = coalesce($5, platforms), description = coalesce($6, description), active = coalesce($7, active)
        WHERE id = $1 AND deleted_at IS NULL`,
      [id, changes.url ?? null, changes.eventTypes ?? null, changes.profileIds ?? null, changes.platforms ?? null,
        changes.description ?? null, changes.active ?? null],
    );
    return (rowCount ?? 0) > 0;
  }

  /** Marks it deleted and cancels what it had pending; answers how many were cancelled, or undefined if none such. */
  async delete(id: string): Promise<number | undefined> {
    const { rows } = await this.database.pool.query<{ cancelled: number }>(
      `WITH deleted AS (
         UPDATE subscription SET deleted_at = now(), active = false WHERE id = $1 AND deleted_at IS NULL RETURNING id
       ), cancelled AS (
         UPDATE notification SET state = 'cancelled', next_attempt_at = NULL
          WHERE subscription_id IN (SELECT id FROM deleted) AND state = 'pending'
         RETURNING 1
       )
       SELECT (SELECT count(*) FROM cancelled)::int AS cancelled FROM deleted`,
      [id],
    );
    return rows[0]?.cancelled;
  }

  /** Closes the circuit breaker: what waited is due now. Answers whether the subscription exists. */
  async resume(id: string): Promise<boolean> {
    const { rows } = await this.database.pool.query(
      `WITH resumed AS (
         UPDATE subscription SET paused_at = NULL, paused_reason = NULL, failing_since = NULL
          WHERE id = $1 AND deleted_at IS NULL RETURNING id
       ), due AS (
         UPDATE notification SET next_attempt_at = now(), failing_since = NULL
          WHERE subscription_id IN (SELECT id FROM resumed) AND state = 'pending'
       )
       SELECT id FROM resumed`,
      [id],
    );
    return rows.length > 0;
  }
}
