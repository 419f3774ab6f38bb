import { randomBytes } from 'node:crypto';
import { Injectable, Logger } from '@nestjs/common';
import { BackfillRunRepository } from '../backfill/backfill-run.repository';
import { ApiError } from '../common/api-error';
import { DEFAULT_WORKSPACE } from '../common/workspace-id';
import { AppConfig } from '../config/app-config';
import type { PozyClient } from '../pozy/pozy-client.service';
import { PozyClients } from '../pozy/pozy-clients.service';
import { PozyProtocolError, PozyRateLimitedError, PozyUnavailableError } from '../pozy/pozy-errors';
import { ReconcileRequestRepository } from '../reconcile/reconcile-request.repository';
import { SweepService } from '../runs/import-and-sweep.service';
import { MirroredWorkspace, WorkspaceRegistry } from '../workspaces/workspace-registry.service';
import { StoredWorkspace, WorkspaceChange, WorkspaceRepository } from '../workspaces/workspace.repository';
import { CreateWorkspaceDto, DEFAULT_OVERLAP_HOURS, UpdateWorkspaceDto } from './dto/workspace.dto';
import { ManagedWebhooks, WebhookTest } from './managed-webhooks.service';
import { WorkspaceRemoval } from './workspace-removal.service';

/** A workspace as the admin API answers it: never its key, never its secret (except `webhook.secret`, once). */
export interface WorkspaceView {
  id: string;
  name: string | null;
  source: 'environment' | 'api';
  state: MirroredWorkspace['state'];
  apiUrl: string;
  rateLimitPerMinute: number;
  webhook: {
    /** Where Pozy must deliver this workspace's events. */
    url: string;
    managed: boolean;
    subscriptionId: string | null;
    health: unknown;
    /** Until when deliveries signed with the secret before the last rotation are accepted. */
    previousSecretUntil: Date | null;
    /** Only in the answer that made it, when pozy-sync generated it and Pozy does not hold it: set it in Pozy. */
    secret?: string;
    /** The test event sent on creation (managed webhooks). */
    test?: WebhookTest;
  };
  removal: unknown;
  lastError: string | null;
  createdAt: Date;
}

/** 32 random bytes, in the form of a made token: the request log redacts that form wherever it appears. */
/** What a view of a workspace is made of. */
type ViewedWorkspace = Pick<MirroredWorkspace, 'id' | 'name' | 'source' | 'state' | 'apiUrl' | 'rateLimitPerMinute' | 'createdAt' | 'stored'>;

const generatedSecret = () => `pzs_${randomBytes(32).toString('base64url')}`;

const HOUR_MS = 3_600_000;

/**
 * The workspace registry's admin API: adds (checking the key against Pozy first, storing nothing when Pozy refuses it
 * or cannot be reached), changes, lists and removes workspaces, and starts a workspace's runs.
 */
@Injectable()
export class WorkspacesService {
  private readonly logger = new Logger(WorkspacesService.name);

  constructor(
    private readonly config: AppConfig,
    private readonly registry: WorkspaceRegistry,
    private readonly repository: WorkspaceRepository,
    private readonly clients: PozyClients,
    private readonly webhooks: ManagedWebhooks,
    private readonly removal: WorkspaceRemoval,
    private readonly sweeps: SweepService,
    private readonly backfills: BackfillRunRepository,
    private readonly requests: ReconcileRequestRepository,
  ) {}

  async create(body: CreateWorkspaceDto): Promise<WorkspaceView> {
    if (this.config.secretsEncryptionKeys.length === 0) {
      throw new ApiError(
        'encryption_key_required',
        'SECRETS_ENCRYPTION_KEY is not set: a workspace\'s API key and webhook secret are stored only encrypted. Set it (docs/security.md, "Secrets") and restart',
      );
    }
    if (this.registry.get(body.id) || (await this.repository.get(body.id))) {
      const why = body.id === DEFAULT_WORKSPACE && this.registry.environmentDefinesDefault ? ' (the environment defines it: POZY_API_KEY)' : '';
      throw new ApiError('workspace_exists', `Workspace ${JSON.stringify(body.id)} exists already${why}`, { field: 'id' });
    }
    const apiUrl = (body.apiUrl ?? this.config.pozy.apiUrl).replace(/\/+$/, '');
    const rateLimitPerMinute = body.rateLimitPerMinute ?? this.config.pozy.rateLimitPerMinute;
    await this.checkKey(body.id, body.apiKey, apiUrl, rateLimitPerMinute);
    const managed = this.webhooks.manages(body.manageWebhook);
    if (managed && body.webhookSecret !== undefined) {
      throw new ApiError(
        'invalid_request',
        'webhookSecret: a managed webhook gets a secret pozy-sync generates; give manageWebhook false to set your own',
        [{ field: 'webhookSecret', problems: ['not with a managed webhook'] }],
      );
    }
    const secret = body.webhookSecret ?? generatedSecret();
    const stored = await this.repository.create({
      id: body.id,
      name: body.name ?? null,
      apiKey: body.apiKey,
      apiUrl,
      rateLimitPerMinute: body.rateLimitPerMinute ?? null,
      webhookSecret: secret,
      manageWebhook: managed,
    });
    // Known here before Pozy's test event arrives: the receive path must accept it.
    await this.registry.refresh();
    let test: WebhookTest | undefined;
    if (managed) {
      const workspace = this.registry.get(stored.id)!;
      let webhookId: string;
      try {
        webhookId = await this.webhooks.create(stored.id, workspace.client, secret);
      } catch (error) {
        // Nothing stays stored: the operator adds it again once Pozy answers.
        await this.repository.delete(stored.id);
        await this.registry.refresh();
        throw pozyFailure(error, 'making its webhook subscription in Pozy');
      }
      await this.repository.update(stored.id, { webhookId });
      await this.registry.refresh();
      test = await this.webhooks.test(workspace.client, webhookId);
      await this.repository.update(stored.id, {
        webhookHealth: {
          checkedAt: new Date().toISOString(),
          isActive: true,
          failureCount: 0,
          ...(test.delivered ? {} : { error: `test event: ${test.answer}` }),
        },
      });
      if (!test.delivered)
        this.logger.warn(`Workspace ${stored.id}: Pozy's test event did not reach ${this.webhooks.receiveUrl(stored.id)} (${test.answer})`);
    }
    await this.registry.refresh();
    this.logger.log(`Workspace ${stored.id} added${managed ? ', with its webhook subscription made in Pozy' : ''}`);
    const view = this.view(this.registry.get(stored.id)!);
    if (!managed && body.webhookSecret === undefined) view.webhook.secret = secret;
    if (test) view.webhook.test = test;
    return view;
  }

  async list(limit = 100, cursor?: string): Promise<{ data: WorkspaceView[]; nextCursor: string | null }> {
    const after = decodeCursor(cursor);
    const environment = this.registry.get(DEFAULT_WORKSPACE);
    const first = after === null && environment?.source === 'environment' ? [environment] : [];
    const rows = await this.repository.page(limit + 1 - first.length, after);
    const views = [...first.map((w) => this.view(w)), ...rows.map((row) => this.view(this.ofRow(row)))];
    const data = views.slice(0, limit);
    const last = rows[Math.min(rows.length, limit - first.length) - 1];
    return { data, nextCursor: views.length > limit && last ? encodeCursor(last.createdAt, last.id) : null };
  }

  /** The workspace and its state: import, last sweep and backfill, budget, reads waiting, its webhook's health. */
  async detail(id: string): Promise<WorkspaceView & Record<string, unknown>> {
    const workspace = this.known(id);
    const [runs, lastBackfill, budget, pending] = await Promise.all([
      this.sweeps.status(undefined, id),
      this.backfills.latestOf(id),
      workspace.client.keyBudget.status(),
      this.requests.pendingOf(id),
    ]);
    return { ...this.view(workspace), import: runs.import, lastSweep: runs.lastSweep, lastBackfill: lastBackfill ?? null, budget, reads: pending };
  }

  async update(id: string, body: UpdateWorkspaceDto): Promise<WorkspaceView> {
    const workspace = this.known(id);
    if (workspace.source === 'environment') {
      throw new ApiError(
        'environment_workspace',
        'The default workspace is defined by the environment (POZY_API_KEY, POZY_WEBHOOK_SECRET): change it there',
      );
    }
    if (workspace.state === 'removing' || workspace.state === 'detached') {
      throw new ApiError('workspace_removed', `Workspace ${id} is ${workspace.state}`);
    }
    const stored = workspace.stored!;
    const change: WorkspaceChange = {};
    if (body.name !== undefined) change.name = body.name;
    if (body.rateLimitPerMinute !== undefined) change.rateLimitPerMinute = body.rateLimitPerMinute;
    if (body.apiKey !== undefined) {
      await this.checkKey(id, body.apiKey, stored.apiUrl, workspace.rateLimitPerMinute);
      change.apiKey = body.apiKey;
    }
    if (body.paused !== undefined) change.state = body.paused ? 'paused' : 'active';
    let answeredSecret: string | undefined;
    if (body.rotateWebhookSecret || body.webhookSecret !== undefined) {
      if (stored.manageWebhook && body.webhookSecret !== undefined) {
        throw new ApiError('invalid_request', 'webhookSecret: a managed webhook gets a secret pozy-sync generates (rotateWebhookSecret: true)', [
          { field: 'webhookSecret', problems: ['not with a managed webhook'] },
        ]);
      }
      const secret = body.webhookSecret ?? generatedSecret();
      const overlapMs = (body.overlapHours ?? DEFAULT_OVERLAP_HOURS) * HOUR_MS;
      change.webhookSecret = secret;
      change.previousSecret = overlapMs > 0 ? stored.webhookSecret : null;
      change.previousSecretUntil = overlapMs > 0 ? new Date(Date.now() + overlapMs) : null;
      if (stored.manageWebhook && stored.webhookId) {
        // The new secret is accepted before Pozy signs with it: stored first, then set in Pozy.
        await this.repository.update(id, change);
        await this.registry.refresh();
        try {
          await (this.registry.get(id)?.client ?? workspace.client).updateSubscription(stored.webhookId, { secret });
        } catch (error) {
          throw pozyFailure(error, 'setting the new secret in Pozy (the old one is still accepted; rotate again)');
        }
      } else if (body.webhookSecret === undefined) {
        answeredSecret = secret;
      }
    }
    const updated = await this.repository.update(id, change, ['active', 'paused']);
    if (!updated) throw new ApiError('not_found', `No workspace ${id}`);
    await this.registry.refresh();
    const view = this.view(this.registry.get(id)!);
    if (answeredSecret) view.webhook.secret = answeredSecret;
    return view;
  }

  async remove(id: string, keepData: boolean): Promise<{ runId: string; state: string }> {
    const workspace = this.known(id);
    if (workspace.source === 'environment') {
      throw new ApiError('environment_workspace', 'The default workspace is defined by the environment (POZY_API_KEY): unset it there to remove it');
    }
    if (workspace.state === 'removing' || workspace.state === 'detached') {
      return { runId: workspace.stored?.removalRunId ?? '', state: workspace.state };
    }
    const runId = await this.removal.start(workspace, keepData);
    return { runId, state: keepData ? 'detached' : 'removing' };
  }

  /** A workspace whose data is read from Pozy now; 404 for one not mirrored, 409 for one paused or removed. */
  activeOne(id: string): MirroredWorkspace {
    const workspace = this.known(id);
    if (workspace.state !== 'active')
      throw new ApiError('workspace_not_active', `Workspace ${id} is ${workspace.state}: nothing is read from Pozy for it`);
    return workspace;
  }

  private known(id: string): MirroredWorkspace {
    const workspace = this.registry.get(id);
    if (!workspace) throw new ApiError('not_found', `No workspace ${JSON.stringify(id)} is mirrored here`);
    return workspace;
  }

  /** One cheap read with the key; nothing is stored when Pozy refuses it or cannot be reached. */
  private async checkKey(id: string, apiKey: string, apiUrl: string, rateLimitPerMinute: number): Promise<void> {
    const probeId = `key-check:${id}`;
    let client: PozyClient;
    try {
      client = this.clients.forWorkspace({ id: probeId, apiKey, apiUrl, rateLimitPerMinute });
    } catch (error) {
      throw new ApiError('invalid_request', `apiUrl: ${(error as Error).message}`, [{ field: 'apiUrl', problems: [(error as Error).message] }]);
    }
    try {
      const check = await client.checkKey();
      if (!check.accepted) {
        const problem = `Pozy at ${apiUrl} refused the key: HTTP ${check.status} ${check.answer}`;
        throw new ApiError('invalid_request', `apiKey: ${problem}`, [{ field: 'apiKey', problems: [problem] }]);
      }
    } catch (error) {
      throw pozyFailure(error, 'checking the API key');
    } finally {
      this.clients.forget(probeId);
    }
  }

  /** As stored: the list reads the table, which may hold a workspace another replica added this very second. */
  private ofRow(row: StoredWorkspace): ViewedWorkspace {
    return {
      id: row.id,
      name: row.name,
      source: 'api',
      state: row.state,
      apiUrl: row.apiUrl,
      rateLimitPerMinute: row.rateLimitPerMinute ?? this.config.pozy.rateLimitPerMinute,
      createdAt: row.createdAt,
      stored: row,
    };
  }

  private view(workspace: ViewedWorkspace): WorkspaceView {
    const stored = workspace.stored;
    return {
      id: workspace.id,
      name: workspace.name,
      source: workspace.source,
      state: workspace.state,
      apiUrl: workspace.apiUrl,
      rateLimitPerMinute: workspace.rateLimitPerMinute,
      webhook: {
        url: this.webhooks.receiveUrl(workspace.id),
        managed: stored?.manageWebhook ?? false,
        subscriptionId: stored?.webhookId ?? null,
        health: stored?.webhookHealth ?? null,
        previousSecretUntil: stored?.previousSecret ? stored.previousSecretUntil : null,
      },
      removal: stored?.removal ?? null,
      lastError: stored?.lastError ?? null,
      createdAt: workspace.createdAt,
    };
  }
}

/** What the admin hears when Pozy could not answer: nothing was stored. */
function pozyFailure(error: unknown, doing: string): unknown {
  if (error instanceof ApiError) return error;
  if (error instanceof PozyRateLimitedError) {
    return new ApiError(
      'pozy_rate_limited',
      `Pozy rate limited the key while ${doing}; nothing was stored: retry later`,
      undefined,
      Math.ceil(error.retryAfterMs / 1000),
    );
  }
  if (error instanceof PozyUnavailableError) {
    return new ApiError('pozy_unreachable', `Pozy could not be reached while ${doing} (${error.message}); nothing was stored: retry later`);
  }
  if (error instanceof PozyProtocolError) {
    return new ApiError(
      'pozy_error',
      `Pozy answered something unexpected while ${doing} (${error.message}); nothing was stored. Is apiUrl Pozy's API?`,
    );
  }
  return error;
}

function encodeCursor(createdAt: Date, id: string): string {
  return Buffer.from(JSON.stringify({ c: createdAt.toISOString(), i: id })).toString('base64url');
}

function decodeCursor(cursor: string | undefined): { createdAt: Date; id: string } | null {
  if (cursor === undefined) return null;
  try {
    const { c, i } = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { c?: unknown; i?: unknown };
    if (typeof c === 'string' && typeof i === 'string' && new Date(c).toISOString() === c) return { createdAt: new Date(c), id: i };
  } catch {
    // Refused below.
  }
  const problem = 'cursor is not one this service returned (use nextCursor as given)';
  throw new ApiError('invalid_request', `Invalid request: cursor: ${problem}`, [{ field: 'cursor', problems: [problem] }]);
}
