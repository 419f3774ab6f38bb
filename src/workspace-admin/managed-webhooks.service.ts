import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { OpsEvents } from '../notifications/ops-events.service';
import { BackfillService } from '../backfill/backfill.service';
import { boundedText } from '../common/bounded-text';
import { AppConfig } from '../config/app-config';
import { LockKey } from '../database/advisory-lock';
import type { PozyClient } from '../pozy/pozy-client.service';
import { LockedSchedule } from '../schedule/locked-schedule';
import { ACCOUNT_EVENTS, POST_EVENTS } from '../receive/pozy-events';
import { MirroredWorkspace, WorkspaceRegistry } from '../workspaces/workspace-registry.service';
import { WebhookHealth, WorkspaceRepository } from '../workspaces/workspace.repository';

/** What the test event sent on creation found. */
export interface WebhookTest {
  delivered: boolean;
  answer: string;
}

/**
 * The webhook subscriptions pozy-sync makes in Pozy for its workspaces (PUBLIC_URL set, `manageWebhook` not false):
 * made on creation (the URL of the workspace's receive path, the events pozy-sync reads, a secret it generated),
 * checked end to end with Pozy's test event, removed with the workspace, and kept healthy: every
 * WEBHOOK_HEALTH_CHECK_MS one worker lists each workspace's subscriptions, turns one Pozy reports inactive on again
 * (`isActive: true`) and runs a backfill for the gap, and says so in the workspace's state and the log.
 */
@Injectable()
export class ManagedWebhooks implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(ManagedWebhooks.name);
  private timer: NodeJS.Timeout | undefined;
  private checking: Promise<void> | undefined;

  constructor(
    private readonly config: AppConfig,
    private readonly registry: WorkspaceRegistry,
    private readonly repository: WorkspaceRepository,
    private readonly backfill: BackfillService,
    private readonly jobs: LockedSchedule,
    private readonly ops: OpsEvents,
  ) {}

  /** Whether a workspace added with `manageWebhook` (default true) gets a managed subscription here. */
  manages(manageWebhook: boolean | undefined): boolean {
    return this.config.publicUrl !== null && manageWebhook !== false;
  }

  /** The URL Pozy must deliver the workspace's events to. */
  receiveUrl(workspaceId: string): string {
    const base = this.config.publicUrl ?? 'https://<PUBLIC_URL>';
    return `${base}/webhooks/pozy/${workspaceId}`;
  }

  /** Makes the subscription in Pozy; throws what the client throws (the caller stores nothing then). */
  async create(workspaceId: string, client: PozyClient, secret: string): Promise<string> {
    const subscription = await client.createSubscription({
      name: `pozy-sync ${workspaceId}`.slice(0, 50),
      url: this.receiveUrl(workspaceId),
      secret,
      events: [...POST_EVENTS, ...ACCOUNT_EVENTS],
    });
    return subscription._id;
  }

  /** Pozy's test event through the whole path: Pozy, this service's receive route, the workspace's secret. */
  async test(client: PozyClient, webhookId: string): Promise<WebhookTest> {
    try {
      return await client.sendTestEvent(webhookId);
    } catch (error) {
      return { delivered: false, answer: boundedText((error as Error).message) };
    }
  }

  /** Removes the subscription in Pozy; a subscription Pozy no longer knows counts as removed. */
  async remove(client: PozyClient, webhookId: string): Promise<void> {
    await client.deleteSubscription(webhookId);
  }

  onApplicationBootstrap(): void {
    if (!this.config.runsWorker || this.config.publicUrl === null) return;
    this.timer = setInterval(() => {
      if (!this.checking) this.checking = this.checkAll().finally(() => (this.checking = undefined));
    }, this.config.webhookHealthCheckMs);
    this.timer.unref();
  }

  async beforeApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.checking;
  }

  /** One pass over every active managed workspace, on one replica at a time. */
  async checkAll(): Promise<void> {
    const lock = await this.jobs.tryLock(LockKey.WebhookHealth);
    if (!lock) return;
    try {
      for (const workspace of this.registry.all()) {
        if (workspace.state === 'active' && workspace.stored?.manageWebhook && workspace.stored.webhookId) await this.check(workspace);
      }
    } finally {
      await lock.release();
    }
  }

  /** Reads the workspace's subscription in Pozy; turns it on again and backfills when Pozy reports it inactive. */
  async check(workspace: MirroredWorkspace): Promise<WebhookHealth> {
    const webhookId = workspace.stored!.webhookId!;
    // From the table, not the registry: a copy a poll behind would drop what the previous check wrote.
    const before = await this.repository.webhookHealth(workspace.id);
    const health: WebhookHealth = {
      checkedAt: new Date().toISOString(),
      ...(before?.reenabledAt ? { reenabledAt: before.reenabledAt, reenabledBecause: before.reenabledBecause } : {}),
      ...(before?.turningOn ? { turningOn: before.turningOn } : {}),
    };
    try {
      const listed = (await workspace.client.listSubscriptions()).find((subscription) => subscription._id === webhookId);
      if (!listed) {
        delete health.turningOn;
        health.error = `Pozy no longer lists subscription ${webhookId}: remove the workspace and add it again, or set manageWebhook false and point Pozy at ${this.receiveUrl(workspace.id)}`;
        this.logger.warn(`Workspace ${workspace.id}: ${health.error}`);
      } else {
        health.isActive = listed.isActive;
        health.failureCount = listed.failureCount;
        // Off now, or found off by a check whose request to turn it on failed and seen on since.
        const found = listed.isActive === false ? { failureCount: listed.failureCount ?? null } : listed.isActive ? before?.turningOn : undefined;
        if (found) {
          if (listed.isActive === false) {
            // Kept if the request fails: Pozy may have turned it on without its answer reaching us.
            health.turningOn = found;
            await workspace.client.updateSubscription(webhookId, { isActive: true });
          }
          delete health.turningOn;
          health.isActive = true;
          health.reenabledAt = new Date().toISOString();
          health.reenabledBecause = `Pozy reported it inactive after ${found.failureCount ?? 'some'} failures`;
          const started = await this.backfill.start('admin', workspace.id);
          await this.ops.emit({
            type: 'ops.webhook.disabled_in_pozy',
            key: `webhook.disabled_in_pozy:${workspace.id}:${webhookId}:${health.reenabledAt}`,
            workspaceId: workspace.id,
            data: {
              pozySubscriptionId: webhookId,
              failureCount: found.failureCount,
              reenabledAt: health.reenabledAt,
              backfillRunId: started.started ? started.runId : null,
            },
          });
          this.logger.warn(
            `Workspace ${workspace.id}: Pozy had turned its webhook subscription off (${found.failureCount ?? '?'} failures); turned it on again` +
              (started.started ? `, backfill ${started.runId} recovers what was missed` : ', a backfill is already running'),
          );
        } else if ((listed.failureCount ?? 0) > (before?.failureCount ?? 0)) {
          this.logger.warn(`Workspace ${workspace.id}: Pozy counts ${listed.failureCount} failed deliveries to ${this.receiveUrl(workspace.id)}`);
        }
      }
    } catch (error) {
      health.error = boundedText(`checking the subscription in Pozy failed: ${(error as Error).message}`);
    }
    await this.repository.update(workspace.id, { webhookHealth: health }, ['active']);
    return health;
  }
}
