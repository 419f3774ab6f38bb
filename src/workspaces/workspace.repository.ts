import { Injectable } from '@nestjs/common';
import { Selectable, sql, Updateable } from 'kysely';
import { SecretBox } from '../common/secret-box';
import { AppConfig } from '../config/app-config';
import { DatabaseService } from '../database/database.service';
import type { DB } from '../generated/kysely/database';
import { GenerateSql, Sample } from '../database/sql-snapshot';

type WorkspaceRow = Selectable<DB['workspace']>;

/** jsonb goes to pg as its JSON text (docs/architecture.md, Typed data access). */
const jsonb = (value: object | null) => (value === null ? null : JSON.stringify(value));

/** What a workspace is doing: see the `state` column in prisma/schema.prisma. */
export type WorkspaceState = 'active' | 'paused' | 'removing' | 'detached';

/** What the last check of a managed subscription in Pozy found. */
export interface WebhookHealth {
  checkedAt: string;
  isActive?: boolean;
  failureCount?: number;
  /** When pozy-sync last turned the subscription on again, and why. */
  reenabledAt?: string;
  reenabledBecause?: string;
  /**
   * Found off by a check whose request to turn it on failed: Pozy may have applied it all the same, so the next check
   * that finds it on finishes the repair (the backfill, the ops event) instead of taking it for never switched off.
   */
  turningOn?: { failureCount: number | null };
  /** The last check or repair that failed, bounded. */
  error?: string;
}

export interface RemovalProgress {
  startedAt: string;
  deleted: number;
  finishedAt?: string;
  keepData: boolean;
}

/** A stored workspace with its secrets opened: only the registry and the admin service hold one. */
export interface StoredWorkspace {
  id: string;
  name: string | null;
  apiKey: string;
  apiUrl: string;
  rateLimitPerMinute: number | null;
  webhookSecret: string;
  previousSecret: string | null;
  previousSecretUntil: Date | null;
  manageWebhook: boolean;
  webhookId: string | null;
  webhookHealth: WebhookHealth | null;
  state: WorkspaceState;
  removalRunId: string | null;
  removal: RemovalProgress | null;
  lastError: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export type NewWorkspace = Pick<StoredWorkspace, 'id' | 'name' | 'apiKey' | 'apiUrl' | 'rateLimitPerMinute' | 'webhookSecret' | 'manageWebhook'>;

export type WorkspaceChange = Partial<
  Pick<
    StoredWorkspace,
    | 'name'
    | 'apiKey'
    | 'apiUrl'
    | 'rateLimitPerMinute'
    | 'webhookSecret'
    | 'previousSecret'
    | 'previousSecretUntil'
    | 'webhookId'
    | 'webhookHealth'
    | 'state'
    | 'removalRunId'
    | 'removal'
    | 'lastError'
  >
>;

/** The authenticated data a sealed value is bound to: a value copied onto another row or column does not open. */
const context = (id: string, column: 'api_key' | 'webhook_secret' | 'previous_secret') => `workspace ${id} ${column}`;

/**
 * The `workspace` table's one owner. Keys and secrets are sealed here on write (SECRETS_ENCRYPTION_KEY) and opened
 * here on read; nothing else sees them sealed.
 */
@Injectable()
export class WorkspaceRepository {
  private readonly box: SecretBox;

  constructor(
    private readonly database: DatabaseService,
    config: AppConfig,
  ) {
    this.box = new SecretBox(config.secretsEncryptionKeys);
  }

  @GenerateSql({
    params: [
      {
        id: Sample.WORKSPACE,
        name: Sample.STRING,
        apiKey: Sample.STRING,
        apiUrl: 'https://pozy.example',
        rateLimitPerMinute: 60,
        webhookSecret: Sample.STRING,
        manageWebhook: true,
      },
    ],
  })
  async create(workspace: NewWorkspace): Promise<StoredWorkspace> {
    const row = await this.database.db
      .insertInto('workspace')
      .values({
        id: workspace.id,
        name: workspace.name,
        api_key: this.box.seal(workspace.apiKey, context(workspace.id, 'api_key')),
        api_url: workspace.apiUrl,
        rate_limit_per_minute: workspace.rateLimitPerMinute,
        webhook_secret: this.box.seal(workspace.webhookSecret, context(workspace.id, 'webhook_secret')),
        manage_webhook: workspace.manageWebhook,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    return this.opened(row);
  }

  @GenerateSql({ params: [Sample.UUID] })
  async get(id: string): Promise<StoredWorkspace | null> {
    const row = await this.database.db.selectFrom('workspace').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? this.opened(row) : null;
  }

  /** The last check of its managed subscription, as stored now (the registry's copy may be a poll behind). */
  @GenerateSql({ params: [Sample.UUID] })
  async webhookHealth(id: string): Promise<WebhookHealth | null> {
    const row = await this.database.db.selectFrom('workspace').select('webhook_health').where('id', '=', id).executeTakeFirst();
    return (row?.webhook_health as WebhookHealth | null | undefined) ?? null;
  }

  /** Every stored workspace, oldest first: the registry's copy (a row per workspace, thousands at most). */
  @GenerateSql({ params: [] })
  async all(): Promise<StoredWorkspace[]> {
    const rows = await this.database.db.selectFrom('workspace').selectAll().orderBy('created_at').orderBy('id').execute();
    return rows.map((row) => this.opened(row));
  }

  /**
   * A digest of every row's id and version: any write (each raises `version`), insert or delete changes it, whatever
   * order their transactions commit in, which a max(updated_at) could not promise.
   */
  @GenerateSql({ params: [] })
  async fingerprint(): Promise<string> {
    const row = await this.database.db
      .selectFrom('workspace')
      .select(sql<string | null>`md5(string_agg(id || ':' || version, ',' ORDER BY id))`.as('digest'))
      .executeTakeFirst();
    return row?.digest ?? '';
  }

  /** Changes a workspace, raising its version; false when there is none (removed meanwhile). `state`: only from that one. */
  @GenerateSql({ params: [Sample.UUID, { name: Sample.STRING, state: 'active' }] })
  async update(id: string, change: WorkspaceChange, onlyIn?: readonly WorkspaceState[]): Promise<StoredWorkspace | null> {
    const data: Updateable<DB['workspace']> = { updated_at: new Date() };
    if (change.name !== undefined) data.name = change.name;
    if (change.apiKey !== undefined) data.api_key = this.box.seal(change.apiKey, context(id, 'api_key'));
    if (change.apiUrl !== undefined) data.api_url = change.apiUrl;
    if (change.rateLimitPerMinute !== undefined) data.rate_limit_per_minute = change.rateLimitPerMinute;
    if (change.webhookSecret !== undefined) data.webhook_secret = this.box.seal(change.webhookSecret, context(id, 'webhook_secret'));
    if (change.previousSecret !== undefined) {
      data.previous_secret = change.previousSecret === null ? null : this.box.seal(change.previousSecret, context(id, 'previous_secret'));
    }
    if (change.previousSecretUntil !== undefined) data.previous_secret_until = change.previousSecretUntil;
    if (change.webhookId !== undefined) data.webhook_id = change.webhookId;
    if (change.webhookHealth !== undefined) data.webhook_health = jsonb(change.webhookHealth);
    if (change.state !== undefined) data.state = change.state;
    if (change.removalRunId !== undefined) data.removal_run_id = change.removalRunId;
    if (change.removal !== undefined) data.removal = jsonb(change.removal);
    if (change.lastError !== undefined) data.last_error = change.lastError;
    let update = this.database.db
      .updateTable('workspace')
      .set(data)
      .set((eb) => ({ version: eb('version', '+', 1) }))
      .where('id', '=', id);
    if (onlyIn) update = update.where('state', 'in', [...onlyIn]);
    const { numUpdatedRows } = await update.executeTakeFirst();
    return numUpdatedRows === 1n ? this.get(id) : null;
  }

  /** The row itself, once its data is gone. */
  @GenerateSql({ params: [Sample.UUID] })
  async delete(id: string): Promise<void> {
    await this.database.db.deleteFrom('workspace').where('id', '=', id).execute();
  }

  /** A page of ids after `after`, by (created_at, id), oldest first. */
  @GenerateSql({ params: [Sample.NUMBER, null] })
  async page(limit: number, after: { createdAt: Date; id: string } | null): Promise<StoredWorkspace[]> {
    let query = this.database.db.selectFrom('workspace').selectAll().orderBy('created_at').orderBy('id').limit(limit);
    if (after) {
      query = query.where((eb) =>
        eb.or([eb('created_at', '>', after.createdAt), eb.and([eb('created_at', '=', after.createdAt), eb('id', '>', after.id)])]),
      );
    }
    const rows = await query.execute();
    return rows.map((row) => this.opened(row));
  }

  /** Re-seals every key and secret on the newest key (npm run secrets:reencrypt); answers how many rows it changed. */
  @GenerateSql({ params: [] })
  async resealAll(): Promise<{ resealed: number; left: number }> {
    const rows = await this.database.db.selectFrom('workspace').selectAll().execute();
    let resealed = 0;
    for (const row of rows) {
      const sealed = [row.api_key, row.webhook_secret, row.previous_secret].filter((v): v is string => v !== null);
      if (sealed.every((value) => this.box.isCurrent(value))) continue;
      const open = this.opened(row);
      const { numUpdatedRows } = await this.database.db
        .updateTable('workspace')
        .set((eb) => ({
          api_key: this.box.seal(open.apiKey, context(row.id, 'api_key')),
          webhook_secret: this.box.seal(open.webhookSecret, context(row.id, 'webhook_secret')),
          previous_secret: open.previousSecret === null ? null : this.box.seal(open.previousSecret, context(row.id, 'previous_secret')),
          version: eb('version', '+', 1),
        }))
        // Only as read: a row changed meanwhile keeps what its writer sealed (with the newest key already).
        .where('id', '=', row.id)
        .where('version', '=', row.version)
        .executeTakeFirst();
      resealed += Number(numUpdatedRows);
    }
    const after = await this.database.db.selectFrom('workspace').select(['api_key', 'webhook_secret', 'previous_secret']).execute();
    const left = after.filter(
      (row) => ![row.api_key, row.webhook_secret, row.previous_secret].every((v) => v === null || this.box.isCurrent(v)),
    ).length;
    return { resealed, left };
  }

  /** Throws SecretKeyError unless every stored key and secret opens with SECRETS_ENCRYPTION_KEY (checked at boot). */
  @GenerateSql({ params: [] })
  async checkSecretsOpen(): Promise<void> {
    for (const row of await this.database.db.selectFrom('workspace').selectAll().execute()) this.opened(row);
  }

  @GenerateSql({ none: 'a helper: its statements show under the methods that call it' })
  private opened(row: WorkspaceRow): StoredWorkspace {
    return {
      id: row.id,
      name: row.name,
      apiKey: this.box.open(row.api_key, context(row.id, 'api_key')),
      apiUrl: row.api_url,
      rateLimitPerMinute: row.rate_limit_per_minute,
      webhookSecret: this.box.open(row.webhook_secret, context(row.id, 'webhook_secret')),
      previousSecret: row.previous_secret === null ? null : this.box.open(row.previous_secret, context(row.id, 'previous_secret')),
      previousSecretUntil: row.previous_secret_until,
      manageWebhook: row.manage_webhook,
      webhookId: row.webhook_id,
      webhookHealth: (row.webhook_health as WebhookHealth | null) ?? null,
      state: row.state as WorkspaceState,
      removalRunId: row.removal_run_id,
      removal: (row.removal as RemovalProgress | null) ?? null,
      lastError: row.last_error,
      createdAt: row.created_at,
      updatedAt: row.updated_at,
    };
  }
}
