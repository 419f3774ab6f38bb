import { Injectable } from '@nestjs/common';
import { type Selectable, sql, type Updateable } from 'kysely';
import { SecretBox } from '../common/secret-box';
import { AppConfig } from '../config/app-config';
import { DatabaseService, type Db } from '../database/database.service';
import { milliseconds, now } from '../database/sql-expressions';
import type { DB } from '../generated/kysely/database';
import type { Subscription as SubscriptionRow } from '../generated/prisma/client';
import { oneOf } from './known-values';
import { NOTIFICATION_TYPES, NotificationType } from './notification-types';
import { GenerateSql, Sample } from '../database/sql-snapshot';

/** A subscription as the admin endpoints answer it (never with its secret, except once when created). */
export type Subscription = Pick<
  SubscriptionRow,
  'id' | 'url' | 'description' | 'workspaceIds' | 'profileIds' | 'platforms' | 'active' | 'createdAt'
> & {
  eventTypes: NotificationType[];
  /** Until when notifications are also signed with the secret before the last rotation; null: only with the current one. */
  previousSecretUntil: Date | null;
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

export type NewSubscription = Pick<SubscriptionRow, 'url' | 'workspaceIds' | 'profileIds' | 'platforms' | 'description' | 'active'> & {
  /** In plaintext: the repository encrypts it. */
  secret: string;
  eventTypes: NotificationType[];
};

/** A subscription's secrets as stored (sealed, or plaintext from before SECRETS_ENCRYPTION_KEY), as the delivery lease reads them. */
export interface StoredSecrets {
  id: string;
  secret: string | null;
  previousSecret: string | null;
  previousSecretUntil: Date | null;
}

/** What signs a subscription's notifications: the current secret, and the previous one until its overlap ends. */
export interface SigningSecrets {
  current: string;
  previous: string | null;
  previousUntil: Date | null;
}

/** The secrets to sign with at `at`: the current one first, then the previous one while its overlap lasts. */
export function secretsAt(signing: SigningSecrets, at: Date): string[] {
  return signing.previous !== null && signing.previousUntil !== null && at < signing.previousUntil
    ? [signing.current, signing.previous]
    : [signing.current];
}

/** Stored secrets by the key that encrypted them (null: plaintext), each with one sample to try the key on. */
export type SecretsCensus = Array<{ keyId: string | null; count: number; sample: StoredSecret }>;
export type StoredSecret = { subscriptionId: string; value: string };

/** One pass of `npm run secrets:reencrypt` over a batch of subscriptions. */
export interface ResealBatch {
  /** The last subscription id of the batch (the next batch starts after it); null: none was left. */
  lastId: string | null;
  /** Values moved to the newest key (or dropped: an expired previous secret). */
  resealed: number;
  /** Rows written meanwhile by the service (a rotation, a deletion): left for the next run. */
  skipped: number;
}

/** The authenticated context of a subscription's secrets: a value copied onto another row does not decrypt there. */
const secretContext = (subscriptionId: string) => `subscription ${subscriptionId}`;

export type SubscriptionChanges = Partial<Omit<NewSubscription, 'secret'>>;

/** Per subscription, its notifications pending and dead (counted through notification_unsettled_idx). */
type Backlog = Map<string, { pending: number; dead: number }>;

/** What a subscription's health is made of, as stored. */
type HealthFields = Pick<
  SubscriptionRow,
  'id' | 'active' | 'failingSince' | 'pausedAt' | 'pausedReason' | 'lastSuccessAt' | 'lastFailureAt' | 'lastError'
>;

function healthOf(row: HealthFields, backlog: Backlog): SubscriptionHealth {
  const counts = backlog.get(row.id);
  return {
    state: !row.active ? 'inactive' : row.pausedAt ? 'paused' : row.failingSince ? 'failing' : 'healthy',
    pending: counts?.pending ?? 0,
    deadLetters: counts?.dead ?? 0,
    failingSince: row.failingSince,
    pausedAt: row.pausedAt,
    pausedReason: row.pausedReason,
    lastSuccessAt: row.lastSuccessAt,
    lastFailureAt: row.lastFailureAt,
    lastError: row.lastError,
  };
}

/** A subscription as GET /sync/status shows it: where it sends and how that goes, never its secrets. */
export type SubscriberHealth = Pick<Subscription, 'id' | 'url' | 'active' | 'health'>;

/** A row under the model's (camelCase) field names. */
function modelOf(row: Selectable<DB['subscription']>): SubscriptionRow {
  return {
    id: row.id,
    url: row.url,
    secret: row.secret,
    previousSecret: row.previous_secret,
    previousSecretUntil: row.previous_secret_until,
    description: row.description,
    eventTypes: row.event_types,
    workspaceIds: row.workspace_ids,
    profileIds: row.profile_ids,
    platforms: row.platforms,
    active: row.active,
    createdAt: row.created_at,
    deletedAt: row.deleted_at,
    failingSince: row.failing_since,
    lastSuccessAt: row.last_success_at,
    lastFailureAt: row.last_failure_at,
    lastError: row.last_error,
    pausedAt: row.paused_at,
    pausedReason: row.paused_reason,
    leaseOwner: row.lease_owner,
    leaseUntil: row.lease_until,
  };
}

function toSubscription(row: SubscriptionRow, backlog: Backlog): Subscription {
  return {
    id: row.id,
    url: row.url,
    description: row.description,
    eventTypes: row.eventTypes.map((type) => oneOf(NOTIFICATION_TYPES, type, 'notification type')),
    workspaceIds: row.workspaceIds,
    profileIds: row.profileIds,
    platforms: row.platforms,
    active: row.active,
    createdAt: row.createdAt,
    previousSecretUntil:
      row.previousSecret !== null && row.previousSecretUntil && row.previousSecretUntil > new Date() ? row.previousSecretUntil : null,
    health: healthOf(row, backlog),
  };
}

/**
 * The `subscription` table. Secrets are encrypted here on write and decrypted here on read (SecretBox, with
 * SECRETS_ENCRYPTION_KEY): no other code sees them stored, and only the deliverer, through signingSecrets(), sees
 * them in plaintext.
 */
@Injectable()
export class SubscriptionRepository {
  private readonly box: SecretBox;

  constructor(
    private readonly database: DatabaseService,
    config: AppConfig,
  ) {
    this.box = new SecretBox(config.secretsEncryptionKeys);
  }

  @GenerateSql({
    params: [
      Sample.UUID,
      {
        url: 'https://subscriber.example',
        workspaceIds: [],
        profileIds: [],
        platforms: [],
        description: null,
        active: true,
        secret: Sample.STRING,
        eventTypes: ['post.updated'],
      },
    ],
  })
  async create(id: string, subscription: NewSubscription): Promise<Subscription> {
    await this.database.db
      .insertInto('subscription')
      .values({
        id,
        url: subscription.url,
        secret: this.box.seal(subscription.secret, secretContext(id)),
        description: subscription.description,
        event_types: subscription.eventTypes,
        workspace_ids: subscription.workspaceIds,
        profile_ids: subscription.profileIds,
        platforms: subscription.platforms,
        active: subscription.active,
      })
      .execute();
    return (await this.get(id))!;
  }

  /**
   * Makes `secret` the signing secret; the current one goes on signing too for `overlapMs` (the database's clock),
   * replacing any previous one still in its overlap. Answers undefined when there is no such subscription.
   */
  @GenerateSql({ params: [Sample.UUID, Sample.STRING, Sample.NUMBER] })
  async rotate(id: string, secret: string, overlapMs: number): Promise<Subscription | undefined> {
    const sealed = this.box.seal(secret, secretContext(id));
    const row = await this.database.db
      .updateTable('subscription')
      // In one UPDATE, `secret` on the right is the value before it: the old secret becomes the previous one.
      .set((eb) => ({
        previous_secret: overlapMs > 0 ? eb.ref('secret') : null,
        previous_secret_until: overlapMs > 0 ? sql<Date>`${now()} + ${milliseconds(overlapMs)}` : null,
        secret: sealed,
      }))
      .where('id', '=', id)
      .where('deleted_at', 'is', null)
      .returning('id')
      .executeTakeFirst();
    return row ? this.get(id) : undefined;
  }

  /** The secrets that sign this lease's notifications, decrypted; throws SecretKeyError when a key is missing or wrong. */
  @GenerateSql({ none: 'opens what another method read' })
  signingSecrets(stored: StoredSecrets): SigningSecrets {
    if (stored.secret === null) throw new Error(`Subscription ${stored.id} has no secret (deleted)`);
    const context = secretContext(stored.id);
    const inOverlap = stored.previousSecret !== null && stored.previousSecretUntil !== null;
    return {
      current: this.box.open(stored.secret, context),
      previous: inOverlap ? this.box.open(stored.previousSecret!, context) : null,
      previousUntil: inOverlap ? stored.previousSecretUntil : null,
    };
  }

  /**
   * Every secret in use (previous ones in their overlap included) counted by the key that encrypted it, null for
   * plaintext, each with one sample: the boot check tries each key on its sample.
   */
  @GenerateSql({ params: [] })
  async secretsCensus(): Promise<SecretsCensus> {
    const rows = await this.database.db
      .selectFrom((db) =>
        db
          .selectFrom('subscription')
          .select(['id', 'secret as value'])
          .where('secret', 'is not', null)
          .unionAll(
            db
              .selectFrom('subscription')
              .select(['id', 'previous_secret as value'])
              .where('previous_secret', 'is not', null)
              .where('previous_secret_until', '>', now()),
          )
          .as('v'),
      )
      .select((eb) => [
        sql<string | null>`CASE WHEN starts_with(v.value, ${SecretBox.SEALED_PREFIX}) THEN split_part(v.value, ':', 3) END`.as('keyId'),
        eb.cast<number>(eb.fn.countAll(), 'integer').as('count'),
        // Any one row of the group, its id and value together.
        sql<[string, string]>`(array_agg(jsonb_build_array(v.id, v.value)))[1]`.as('sample'),
      ])
      .groupBy('keyId')
      .execute();
    return rows.map(({ keyId, count, sample: [subscriptionId, value] }) => ({ keyId, count, sample: { subscriptionId, value } }));
  }

  /**
   * Re-encrypts with the newest key the secrets of up to `limit` subscriptions after `after` (in id order) that are
   * not on it yet (plaintext included), and drops previous secrets whose overlap has ended. Each row is written only
   * if it still holds what was read, so a rotation or deletion meanwhile wins; a run can stop anywhere and be
   * started again.
   */
  @GenerateSql({ params: [null, Sample.NUMBER] })
  async resealBatch(after: string | null, limit: number): Promise<ResealBatch> {
    const newest = this.box.newestKeyId;
    if (newest === undefined) throw new Error('SECRETS_ENCRYPTION_KEY is not set: there is no key to encrypt with');
    const prefix = SecretBox.prefixOf(newest);
    const rows = await this.database.db
      .selectFrom('subscription')
      .select(['id', 'secret', 'previous_secret', (eb) => eb('previous_secret_until', '>', now()).as('inOverlap')])
      .$if(after !== null, (qb) => qb.where('id', '>', after!))
      .where((eb) =>
        eb.or([
          eb.and([eb('secret', 'is not', null), eb.not(eb.fn<boolean>('starts_with', ['secret', eb.val(prefix)]))]),
          eb('previous_secret', 'is not', null),
        ]),
      )
      .orderBy('id')
      .limit(limit)
      .execute();
    let resealed = 0;
    let skipped = 0;
    for (const row of rows) {
      const context = secretContext(row.id);
      const reseal = (value: string) => (this.box.isCurrent(value) ? value : this.box.seal(this.box.open(value, context), context));
      const secret = row.secret === null ? null : reseal(row.secret);
      const previous = row.previous_secret === null || !row.inOverlap ? null : reseal(row.previous_secret);
      const changed = Number(secret !== row.secret) + Number(previous !== row.previous_secret);
      if (changed === 0) continue;
      const written = await this.database.db
        .updateTable('subscription')
        .set({ secret, previous_secret: previous, ...(previous === null ? { previous_secret_until: null } : {}) })
        .where('id', '=', row.id)
        .where((eb) => eb.and([eb('secret', 'is not distinct from', row.secret), eb('previous_secret', 'is not distinct from', row.previous_secret)]))
        .executeTakeFirst();
      if (written.numUpdatedRows > 0n) resealed += changed;
      else skipped += 1;
    }
    return { lastId: rows.at(-1)?.id ?? null, resealed, skipped };
  }

  /** Decrypts a census sample, only to see that it can: throws SecretKeyError otherwise. */
  @GenerateSql({ none: 'opens what another method read' })
  checkOpens(sample: StoredSecret): void {
    this.box.open(sample.value, secretContext(sample.subscriptionId));
  }

  /** How many secrets are not on the newest key yet (plaintext included): what a re-encryption run leaves to do. */
  @GenerateSql({ params: [] })
  async secretsNotOnNewestKey(): Promise<number> {
    const newest = this.box.newestKeyId;
    return (await this.secretsCensus()).filter((group) => group.keyId !== (newest ?? null)).reduce((sum, group) => sum + group.count, 0);
  }

  @GenerateSql({ params: [] })
  async list(): Promise<Subscription[]> {
    const rows = (
      await this.database.db.selectFrom('subscription').selectAll().where('deleted_at', 'is', null).orderBy('created_at').orderBy('id').execute()
    ).map(modelOf);
    const backlog = await this.backlog(rows.map((r) => r.id));
    return rows.map((row) => toSubscription(row, backlog));
  }

  /** Every subscription's health (deleted ones aside), oldest first; in the caller's snapshot when it passes one. */
  @GenerateSql({ params: [] })
  async health(db: Db = this.database.db): Promise<SubscriberHealth[]> {
    const rows = await db
      .selectFrom('subscription')
      .select([
        'id',
        'url',
        'active',
        'failing_since as failingSince',
        'paused_at as pausedAt',
        'paused_reason as pausedReason',
        'last_success_at as lastSuccessAt',
        'last_failure_at as lastFailureAt',
        'last_error as lastError',
      ])
      .where('deleted_at', 'is', null)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    const backlog = await this.backlog(
      rows.map((r) => r.id),
      db,
    );
    return rows.map((row) => ({ id: row.id, url: row.url, active: row.active, health: healthOf(row, backlog) }));
  }

  @GenerateSql({ params: [Sample.UUID] })
  async get(id: string): Promise<Subscription | undefined> {
    const row = await this.database.db.selectFrom('subscription').selectAll().where('id', '=', id).where('deleted_at', 'is', null).executeTakeFirst();
    return row ? toSubscription(modelOf(row), await this.backlog([id])) : undefined;
  }

  /** Only the fields given change; answers whether the subscription exists. */
  @GenerateSql({ params: [Sample.UUID, { url: 'https://subscriber.example', active: true }] })
  async update(id: string, changes: SubscriptionChanges): Promise<boolean> {
    // A field absent or null stays as it is.
    const set: Updateable<DB['subscription']> = {
      url: changes.url ?? undefined,
      event_types: changes.eventTypes ?? undefined,
      workspace_ids: changes.workspaceIds ?? undefined,
      profile_ids: changes.profileIds ?? undefined,
      platforms: changes.platforms ?? undefined,
      description: changes.description ?? undefined,
      active: changes.active ?? undefined,
    };
    const given = Object.fromEntries(Object.entries(set).filter(([, value]) => value !== undefined));
    // Prisma's updateMany with nothing to set still answered whether the row exists.
    if (Object.keys(given).length === 0) return (await this.get(id)) !== undefined;
    const { numUpdatedRows } = await this.database.db
      .updateTable('subscription')
      .set(given)
      .where('id', '=', id)
      .where('deleted_at', 'is', null)
      .executeTakeFirst();
    return numUpdatedRows > 0n;
  }

  /**
   * Marks it deleted, drops its secrets and cancels what it had pending, in one statement; answers how many were cancelled, or undefined
   * if none such.
   */
  @GenerateSql({ params: [Sample.UUID] })
  async delete(id: string): Promise<number | undefined> {
    const row = await this.database.db
      .with('deleted', (db) =>
        db
          .updateTable('subscription')
          // It signs nothing any more: its secrets go.
          .set({ deleted_at: now(), active: false, secret: null, previous_secret: null, previous_secret_until: null })
          .where('id', '=', id)
          .where('deleted_at', 'is', null)
          .returning('id'),
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
  @GenerateSql({ params: [Sample.UUID] })
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

  @GenerateSql({ none: 'a helper: its statements show under the methods that call it' })
  private async backlog(ids: string[], db: Db = this.database.db): Promise<Backlog> {
    const backlog: Backlog = new Map();
    if (ids.length === 0) return backlog;
    const groups = await db
      .selectFrom('notification')
      .select((eb) => ['subscription_id', 'state', eb.cast<number>(eb.fn.countAll(), 'integer').as('count')])
      .where('state', 'in', ['pending', 'dead'])
      .where('subscription_id', 'in', ids)
      .groupBy(['subscription_id', 'state'])
      .execute();
    for (const { subscription_id: subscriptionId, state, count } of groups) {
      const counts = backlog.get(subscriptionId) ?? { pending: 0, dead: 0 };
      if (state === 'pending') counts.pending = count;
      else counts.dead = count;
      backlog.set(subscriptionId, counts);
    }
    return backlog;
  }
}
