import { BeforeApplicationShutdown, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { WakeableLoop } from '../common/wakeable-loop';
import { DEFAULT_WORKSPACE, WorkspaceId } from '../common/workspace-id';
import { AppConfig } from '../config/app-config';
import { PozyClient } from '../pozy/pozy-client.service';
import { PozyClients } from '../pozy/pozy-clients.service';
import { StoredWorkspace, WorkspaceRepository, WorkspaceState } from './workspace.repository';

/** Every replica reads the table's fingerprint this often: a workspace added, changed or removed on another holds here within about this. */
export const WORKSPACES_POLL_MS = 1_000;

/** A workspace as every part of the pipeline sees it, on every replica. */
export interface MirroredWorkspace {
  readonly id: WorkspaceId;
  readonly name: string | null;
  /** `environment`: the `default` workspace built from POZY_API_KEY; `api`: added with POST /admin/workspaces. */
  readonly source: 'environment' | 'api';
  readonly state: WorkspaceState;
  /** The secrets a delivery may be signed with, the current one first; empty only for an environment without POZY_WEBHOOK_SECRET. */
  readonly secrets: readonly string[];
  readonly apiUrl: string;
  /** The figure this workspace gives its key (the smallest of a key's holds). */
  readonly rateLimitPerMinute: number;
  /** Its key's client (pozy/pozy-clients.service.ts). */
  readonly client: PozyClient;
  readonly createdAt: Date;
  /** The stored row, for the admin API; null for the environment's workspace. */
  readonly stored: StoredWorkspace | null;
}

/**
 * The workspaces this deployment mirrors, in memory on every replica: the environment's `default` (when POZY_API_KEY
 * is set) and those in the `workspace` table. A poll of the table's fingerprint every second tells when to read it
 * again, so a workspace added, changed or removed through any replica holds on every one within about a second;
 * the replica that made the change holds it at once (`changed`). Lookups cost a Map read.
 */
@Injectable()
export class WorkspaceRegistry implements OnModuleInit, BeforeApplicationShutdown {
  private readonly logger = new Logger(WorkspaceRegistry.name);
  private byId: ReadonlyMap<string, MirroredWorkspace> = new Map();
  /** Every added workspace's API key and webhook secrets, for the request log's redaction. */
  private secrets: ReadonlySet<string> = new Set();
  private fingerprint: string | undefined;
  private queue: Promise<void> = Promise.resolve();
  private readonly poll = new WakeableLoop({
    pass: async () => {
      await this.tick();
      return null;
    },
    idleMs: WORKSPACES_POLL_MS,
    retryMs: WORKSPACES_POLL_MS,
    logger: this.logger,
    what: 'Reading the workspaces',
  });
  private failing = false;
  private readonly listeners: ((ids: ReadonlySet<string>) => void)[] = [];

  constructor(
    private readonly config: AppConfig,
    private readonly repository: WorkspaceRepository,
    private readonly clients: PozyClients,
  ) {}

  /** Read before anything starts (after the migrations): no delivery, job or run meets an empty registry. */
  async onModuleInit(): Promise<void> {
    await this.refresh();
    this.poll.start(WORKSPACES_POLL_MS);
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.poll.stop();
    await this.queue;
  }

  /** Whether the environment defines `default` (POZY_API_KEY): then the API cannot add or remove it. */
  get environmentDefinesDefault(): boolean {
    return this.config.pozy.apiKey !== '';
  }

  /** A workspace in any state, removing and detached included. */
  get(id: string): MirroredWorkspace | undefined {
    return this.byId.get(id);
  }

  /** A workspace whose deliveries are received (active or paused). */
  receiving(id: string): MirroredWorkspace | undefined {
    const workspace = this.byId.get(id);
    return workspace && (workspace.state === 'active' || workspace.state === 'paused') ? workspace : undefined;
  }

  /** A workspace whose data is read from Pozy now (active). */
  active(id: string): MirroredWorkspace | undefined {
    const workspace = this.byId.get(id);
    return workspace?.state === 'active' ? workspace : undefined;
  }

  /** The keys and secrets no log line may hold (the environment's are redacted from the configuration). */
  secretsToRedact(): ReadonlySet<string> {
    return this.secrets;
  }

  /** Every workspace, oldest first (`default` of the environment first). */
  all(): MirroredWorkspace[] {
    return [...this.byId.values()];
  }

  /** Called with the ids whose entry changed (added, changed, removed) after every read that changed something. */
  onChange(listener: (ids: ReadonlySet<string>) => void): void {
    this.listeners.push(listener);
  }

  /** Reads the table now, after whatever read is in flight. */
  refresh(): Promise<void> {
    const run = this.queue.then(() => this.read());
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async read(): Promise<void> {
    const fingerprint = await this.repository.fingerprint();
    if (fingerprint === this.fingerprint) return;
    const rows = await this.repository.all();
    this.replace(rows);
    this.fingerprint = fingerprint;
  }

  private replace(rows: StoredWorkspace[]): void {
    const next = new Map<string, MirroredWorkspace>();
    const environment = this.environmentWorkspace();
    if (environment) next.set(environment.id, environment);
    for (const row of rows) {
      if (row.id === DEFAULT_WORKSPACE && environment) continue;
      next.set(row.id, this.entry(row));
    }
    const changed = new Set<string>();
    for (const [id, workspace] of next) {
      const before = this.byId.get(id);
      if (!before || before.stored?.updatedAt.getTime() !== workspace.stored?.updatedAt.getTime() || before.state !== workspace.state)
        changed.add(id);
    }
    for (const id of this.byId.keys()) {
      if (!next.has(id)) {
        changed.add(id);
        this.clients.forget(id);
      }
    }
    this.byId = next;
    this.secrets = new Set(rows.flatMap((row) => [row.apiKey, row.webhookSecret, ...(row.previousSecret ? [row.previousSecret] : [])]));
    if (changed.size > 0) for (const listener of this.listeners) listener(changed);
  }

  private environmentWorkspace(): MirroredWorkspace | undefined {
    if (!this.environmentDefinesDefault) return undefined;
    const existing = this.byId.get(DEFAULT_WORKSPACE);
    if (existing?.source === 'environment') return existing;
    const access = this.clients.defaultAccess();
    return Object.freeze({
      id: DEFAULT_WORKSPACE,
      name: null,
      source: 'environment' as const,
      state: 'active' as const,
      secrets: this.config.pozy.webhookSecrets,
      apiUrl: access.apiUrl,
      rateLimitPerMinute: access.rateLimitPerMinute,
      client: this.clients.forWorkspace(access),
      createdAt: new Date(0),
      stored: null,
    });
  }

  private entry(row: StoredWorkspace): MirroredWorkspace {
    const rateLimitPerMinute = row.rateLimitPerMinute ?? this.config.pozy.rateLimitPerMinute;
    const overlap = row.previousSecret !== null && row.previousSecretUntil !== null && row.previousSecretUntil.getTime() > Date.now();
    return Object.freeze({
      id: row.id,
      name: row.name,
      source: 'api' as const,
      state: row.state,
      secrets: Object.freeze(overlap ? [row.webhookSecret, row.previousSecret!] : [row.webhookSecret]),
      apiUrl: row.apiUrl,
      rateLimitPerMinute,
      client: this.clients.forWorkspace({ id: row.id, apiKey: row.apiKey, apiUrl: row.apiUrl, rateLimitPerMinute }),
      createdAt: row.createdAt,
      stored: row,
    });
  }

  private async tick(): Promise<void> {
    try {
      // An overlap that has ended changes nothing in the table: read again so the old secret stops being accepted.
      if ([...this.byId.values()].some((w) => w.secrets.length > 1 && (w.stored?.previousSecretUntil?.getTime() ?? Infinity) <= Date.now())) {
        this.fingerprint = undefined;
      }
      await this.refresh();
      if (this.failing) this.logger.log('Reading the workspaces again');
      this.failing = false;
    } catch (error) {
      if (!this.failing)
        this.logger.warn(`Reading the workspaces failed (${(error as Error).message}); retrying every second, with the copy read last`);
      this.failing = true;
    }
  }
}
