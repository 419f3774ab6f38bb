import { randomUUID } from 'node:crypto';
import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { boundedText } from '../common/bounded-text';
import { AppConfig } from '../config/app-config';
import { HeldLock, LockKey, workspaceLockPart } from '../database/advisory-lock';
import { LockedSchedule } from '../schedule/locked-schedule';
import { MirroredWorkspace, WorkspaceRegistry } from '../workspaces/workspace-registry.service';
import { RemovalProgress, WorkspaceRepository } from '../workspaces/workspace.repository';
import { ManagedWebhooks } from './managed-webhooks.service';
import { WORKSPACE_TABLES, WorkspaceRowsRepository } from './workspace-rows.repository';

/** Rows per statement: short enough that no other workspace's write waits behind one for long. */
const BATCH_ROWS = 500;
/**
 * Between batches, at least this, and at least this many times the batch took: the deletion takes about a quarter
 * of the database's (and a 2-core machine's) time, whatever the load, not all of it.
 */
const PAUSE_MS = 20;
const PAUSE_PER_BATCH_MS = 3;
/** Progress is written at most this often (each write makes every replica read the registry again). */
const PROGRESS_EVERY_MS = 2_000;
/** How often a worker looks for a removal left behind by a replica that stopped. */
const RESUME_EVERY_MS = 10_000;

/**
 * Removes a workspace: marks it `removing` (every replica stops receiving, reading and running for it within about
 * a second, the one asked at once), removes its managed webhook in Pozy, then deletes its rows in batches in the
 * background, and the registry row last. A replica that stops mid-way leaves it `removing`: a worker resumes it.
 * `keepData`: the workspace is `detached` instead, its rows kept and readable.
 */
@Injectable()
export class WorkspaceRemoval implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(WorkspaceRemoval.name);
  private readonly running = new Map<string, Promise<void>>();
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly config: AppConfig,
    private readonly registry: WorkspaceRegistry,
    private readonly repository: WorkspaceRepository,
    private readonly rows: WorkspaceRowsRepository,
    private readonly webhooks: ManagedWebhooks,
    private readonly jobs: LockedSchedule,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.config.runsWorker) return;
    this.timer = setInterval(() => void this.resumeLeftBehind(), RESUME_EVERY_MS);
    this.timer.unref();
    void this.resumeLeftBehind();
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await Promise.all([...this.running.values()]);
  }

  /** Starts the removal; answers its run id. The caller checked that the workspace may be removed. */
  async start(workspace: MirroredWorkspace, keepData: boolean): Promise<string> {
    const runId = randomUUID();
    const removal: RemovalProgress = { startedAt: new Date().toISOString(), deleted: 0, keepData };
    const marked = await this.repository.update(workspace.id, { state: keepData ? 'detached' : 'removing', removalRunId: runId, removal }, [
      'active',
      'paused',
    ]);
    if (!marked) return workspace.stored?.removalRunId ?? runId;
    await this.registry.refresh();
    await this.removeWebhook(workspace);
    if (keepData) {
      await this.repository.update(workspace.id, { removal: { ...removal, finishedAt: new Date().toISOString() } });
      this.logger.log(`Workspace ${workspace.id} detached: nothing is mirrored for it any more, its rows are kept`);
      return runId;
    }
    this.launch(workspace.id);
    return runId;
  }

  private async removeWebhook(workspace: MirroredWorkspace): Promise<void> {
    const webhookId = workspace.stored?.webhookId;
    if (!workspace.stored?.manageWebhook || !webhookId) return;
    try {
      await this.webhooks.remove(workspace.client, webhookId);
      await this.repository.update(workspace.id, { webhookId: null });
      this.logger.log(`Workspace ${workspace.id}: its webhook subscription ${webhookId} is removed in Pozy`);
    } catch (error) {
      const message = boundedText(
        `removing the webhook subscription ${webhookId} in Pozy failed: ${(error as Error).message}; remove it in Pozy by hand`,
      );
      this.logger.warn(`Workspace ${workspace.id}: ${message}`);
      await this.repository.update(workspace.id, { lastError: message });
    }
  }

  private launch(workspaceId: string): void {
    if (this.running.has(workspaceId)) return;
    const run = this.deleteRows(workspaceId)
      .catch((error: unknown) => this.logger.error(`Removing workspace ${workspaceId} failed (a worker resumes it): ${(error as Error).message}`))
      .finally(() => this.running.delete(workspaceId));
    this.running.set(workspaceId, run);
  }

  private async resumeLeftBehind(): Promise<void> {
    for (const workspace of this.registry.all()) {
      if (workspace.state === 'removing' && !this.running.has(workspace.id) && !this.stopped) this.launch(workspace.id);
    }
  }

  /** With the workspace's removal lock (one replica at a time): every row in batches, then the registry row. */
  private async deleteRows(workspaceId: string): Promise<void> {
    const lock: HeldLock | null = await this.jobs.tryLock([LockKey.WorkspaceRemoval, workspaceLockPart(workspaceId)]);
    if (!lock) return;
    try {
      const stored = await this.repository.get(workspaceId);
      if (stored?.state !== 'removing') return;
      const progress: RemovalProgress = stored.removal ?? { startedAt: new Date().toISOString(), deleted: 0, keepData: false };
      let writtenAt = Date.now();
      for (const table of WORKSPACE_TABLES) {
        for (;;) {
          if (this.stopped) return;
          const began = Date.now();
          const deleted = await this.rows.deleteBatch(table, workspaceId, BATCH_ROWS);
          const took = Date.now() - began;
          progress.deleted += deleted;
          if (Date.now() - writtenAt > PROGRESS_EVERY_MS) {
            await this.repository.update(workspaceId, { removal: progress }, ['removing']);
            writtenAt = Date.now();
          }
          if (deleted < BATCH_ROWS) break;
          await new Promise((resolve) => setTimeout(resolve, Math.max(PAUSE_MS, took * PAUSE_PER_BATCH_MS)));
        }
      }
      await this.repository.delete(workspaceId);
      await this.registry.refresh();
      this.logger.log(`Workspace ${workspaceId} removed: ${progress.deleted} rows deleted`);
    } finally {
      await lock.release();
    }
  }
}
