import { Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { Tracing } from '../tracing/tracing.service';
import { OpsEvents } from '../notifications/ops-events.service';
import { Pool } from 'undici';
import { AppConfig } from '../config/app-config';
import { MetricsService } from '../metrics/metrics.service';
import { DEFAULT_WORKSPACE } from '../common/workspace-id';
import { budgetKeyId } from './budget/budget-key';
import { BudgetRepository } from './budget/budget.repository';
import { PozyBudget } from './budget/pozy-budget.service';
import { PozyClient } from './pozy-client.service';
import { PozyClock } from './pozy-clock.service';

/** What a workspace reaches Pozy with. */
export interface PozyWorkspaceAccess {
  /** The workspace's id (src/common/workspace-id.ts). */
  id: string;
  apiKey: string;
  /** Pozy's API base URL, e.g. `https://api.pozy.example` (a path is kept, a trailing slash is not). */
  apiUrl: string;
  /** Requests per window (POZY_RATE_LIMIT_WINDOW_MS) the workspace may make: the smallest of a key's holds. */
  rateLimitPerMinute: number;
}

/** Connections per Pozy host, shared by every key on it (as many as the one client had before workspaces). */
const CONNECTIONS_PER_ORIGIN = 32;

interface Registration {
  keyId: string;
  /** Its client's place in the cache. */
  clientKey: string;
  perWindow: number;
}

/**
 * Pozy clients per workspace: one undici pool per API origin (hundreds of workspaces on one host share its
 * connections), one budget per API key (budget-key.ts: every workspace and replica using the key spends from its
 * one row, and a 429 or headers on one key slow that key only), one client per (key, URL), cached. A client holds
 * no limit of its own: a workspace's changed limit changes its key's budget, which its cached client uses; a
 * changed key or URL gives another client, and the old one leaves the cache once no workspace uses it.
 */
@Injectable()
export class PozyClients implements OnApplicationShutdown {
  private readonly logger = new Logger(PozyClients.name);
  private readonly pools = new Map<string, Pool>();
  /** By key id. Kept while the process runs: an idle budget holds no timer, and callers may still hold its clients. */
  private readonly budgets = new Map<string, PozyBudget>();
  /** By `${key id} ${URL}`. */
  private readonly clients = new Map<string, PozyClient>();
  private readonly registrations = new Map<string, Registration>();
  private closed = false;

  constructor(
    private readonly config: AppConfig,
    private readonly metrics: MetricsService,
    private readonly repository: BudgetRepository,
    private readonly clock: PozyClock,
    private readonly tracing: Tracing,
    private readonly ops: OpsEvents,
  ) {}

  /** The environment's workspace (POZY_API_KEY at POZY_API_URL, POZY_RATE_LIMIT_PER_MINUTE). */
  defaultAccess(): PozyWorkspaceAccess {
    const { apiKey, apiUrl, rateLimitPerMinute } = this.config.pozy;
    return { id: DEFAULT_WORKSPACE, apiKey, apiUrl, rateLimitPerMinute };
  }

  /**
   * The client of `workspace`: its key's Bearer and budget, its URL's pool. Registers its limit for its key (see
   * `setRateLimit`); call again whenever the workspace's key, URL or limit change.
   */
  forWorkspace(workspace: PozyWorkspaceAccess): PozyClient {
    if (this.closed) throw new Error('The service is stopping');
    if (workspace.apiKey === '') throw new RangeError(`Workspace ${workspace.id} has no Pozy API key`);
    const url = new URL(workspace.apiUrl);
    const apiUrl = `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
    const keyId = budgetKeyId(workspace.apiKey);
    const clientKey = `${keyId} ${apiUrl}`;
    this.register(workspace.id, workspace.apiKey, workspace.rateLimitPerMinute, clientKey);
    let client = this.clients.get(clientKey);
    if (!client) {
      client = new PozyClient({
        pool: this.poolFor(url.origin),
        basePath: url.pathname.replace(/\/+$/, ''),
        apiKey: workspace.apiKey,
        budget: this.budgetOf(workspace.apiKey),
        clock: this.clock,
        metrics: this.metrics,
        config: this.config,
        tracing: this.tracing,
        // At most one a key an hour while Pozy refuses it: every read fails alike, each one its own dead letter.
        keyRejected: (status, route) =>
          void this.ops.emit({
            type: 'ops.api_key.rejected',
            key: `api_key.rejected:${keyId}:${new Date().toISOString().slice(0, 13)}`,
            workspaceId: null,
            data: { keyId, status, route, apiUrl, workspaces: this.workspacesOf(keyId) },
          }),
      });
      this.clients.set(clientKey, client);
    }
    return client;
  }

  /**
   * Registers (or changes) what `workspaceId` may spend of `apiKey`'s budget per window. Workspaces sharing a key
   * may be given different figures: the smallest holds for the key. A workspace that moves to another key no longer
   * counts for the old one.
   */
  setRateLimit(workspaceId: string, apiKey: string, rateLimitPerMinute: number): void {
    this.register(workspaceId, apiKey, rateLimitPerMinute, undefined);
  }

  /** `workspaceId` is gone: its limit stops holding for its key, and its client leaves the cache unless others use it. */
  forget(workspaceId: string): void {
    const before = this.registrations.get(workspaceId);
    if (!before) return;
    this.registrations.delete(workspaceId);
    this.applyLimit(before.keyId);
    this.evictUnused(before.clientKey);
  }

  /** `apiKey`'s budget in this process (made on first use, at POZY_RATE_LIMIT_PER_MINUTE until a workspace registers). */
  budgetOf(apiKey: string): PozyBudget {
    const keyId = budgetKeyId(apiKey);
    let budget = this.budgets.get(keyId);
    if (!budget) {
      const { pozy } = this.config;
      budget = new PozyBudget(
        this.repository,
        keyId,
        { perWindow: pozy.rateLimitPerMinute, windowMs: pozy.rateLimitWindowMs, reserve: pozy.rateLimitReserve, maxPauseMs: pozy.maxPauseMs },
        {
          lanes: true,
          // The environment's key keeps its log lines as they were; another's names its key id.
          name: apiKey === pozy.apiKey ? undefined : keyId,
          waited: (lane, ms) => this.metrics.budgetWait.observe({ lane }, ms / 1000),
          paused: () => this.metrics.budgetPauses.inc(),
          stormBegan: ({ keyId: id, at, pausedForMs, why }) =>
            void this.ops.emit({
              type: 'ops.budget.paused',
              key: `budget.paused:${id}:${at}`,
              workspaceId: null,
              data: { keyId: id, pausedAt: new Date(at).toISOString(), pausedForMs, why },
            }),
        },
      );
      this.budgets.set(keyId, budget);
    }
    return budget;
  }

  /** Last, once the worker has let its running jobs finish (beforeApplicationShutdown): they may still call Pozy. */
  async onApplicationShutdown(): Promise<void> {
    this.closed = true;
    for (const budget of this.budgets.values()) budget.onApplicationShutdown();
    await Promise.all([...this.pools.values()].map((pool) => pool.close()));
  }

  private register(workspaceId: string, apiKey: string, perWindow: number, clientKey: string | undefined): void {
    if (!Number.isInteger(perWindow) || perWindow < 1) {
      throw new RangeError(`Workspace ${workspaceId}: a rate limit must be a positive integer, not ${perWindow}`);
    }
    const keyId = budgetKeyId(apiKey);
    const before = this.registrations.get(workspaceId);
    // Without a client named, the workspace keeps its client while its key is the same.
    const client = clientKey ?? (before?.keyId === keyId ? before.clientKey : '');
    this.registrations.set(workspaceId, { keyId, clientKey: client, perWindow });
    this.budgetOf(apiKey);
    this.applyLimit(keyId);
    if (before && before.keyId !== keyId) this.applyLimit(before.keyId);
    if (before && before.clientKey !== client) this.evictUnused(before.clientKey);
  }

  /** The workspaces registered on a key in this process. */
  private workspacesOf(keyId: string): string[] {
    return [...this.registrations].filter(([, registration]) => registration.keyId === keyId).map(([id]) => id);
  }

  private poolFor(origin: string): Pool {
    let pool = this.pools.get(origin);
    if (!pool) {
      const timeout = this.config.pozy.timeoutMs;
      pool = new Pool(origin, { connections: CONNECTIONS_PER_ORIGIN, connectTimeout: timeout, headersTimeout: timeout, bodyTimeout: timeout });
      this.pools.set(origin, pool);
    }
    return pool;
  }

  /** The smallest limit the key's workspaces were given; unchanged when none is left (the budget stays as it was). */
  private applyLimit(keyId: string): void {
    const figures = [...this.registrations.values()].filter((r) => r.keyId === keyId).map((r) => r.perWindow);
    const budget = this.budgets.get(keyId);
    if (!budget || figures.length === 0) return;
    const smallest = Math.min(...figures);
    if (smallest !== budget.perWindow) {
      this.logger.log(`The Pozy budget of API key ${keyId} is now ${smallest} requests a window (the smallest of its ${figures.length} workspaces')`);
      budget.setPerWindow(smallest);
    }
  }

  private evictUnused(clientKey: string): void {
    if (![...this.registrations.values()].some((r) => r.clientKey === clientKey)) this.clients.delete(clientKey);
  }
}
