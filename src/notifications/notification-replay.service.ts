import { Injectable } from '@nestjs/common';
import { ApiError } from '../common/api-error';
import { parseInstant } from '../common/instant';
import { AppConfig } from '../config/app-config';
import { ReplaySource } from './dto/notification.query';
import { NotificationHistoryRepository } from './notification-history.repository';
import { NotificationSignal } from './notification-signal';
import { SubscriptionRepository } from './subscription.repository';

export interface BulkReplayResult {
  subscriptionId: string;
  source: ReplaySource;
  since: string;
  /** Notifications the replay takes (or would take, in a dry run). */
  count: number;
  dryRun: boolean;
}

/**
 * Sends notifications again with their original `webhook-id`, so receivers can deduplicate: from the dead-letter
 * queue, or from what was already delivered. Replays are spread out per subscriber (NOTIFY_REPLAY_PER_SECOND), and a
 * version of a resource older than one the subscriber already has is never replayed.
 */
@Injectable()
export class NotificationReplayService {
  constructor(
    private readonly history: NotificationHistoryRepository,
    private readonly subscriptions: SubscriptionRepository,
    private readonly signal: NotificationSignal,
    private readonly config: AppConfig,
  ) {}

  async replayOne(id: string): Promise<{ replayed: true; id: string }> {
    const notification = await this.history.get(id);
    if (!notification) throw new ApiError('not_found', `No notification ${id}`);
    if (notification.state === 'pending') throw new ApiError('already_pending', `Notification ${id} is already waiting to be sent`);
    if (notification.state === 'cancelled') throw new ApiError('subscription_deleted', `The subscription of notification ${id} was deleted`);
    const newer = await this.history.newerThan(id);
    if (newer) {
      throw new ApiError('superseded', `A newer version of ${notification.resourceKey} exists for this subscriber (${newer}); replay that one`, {
        newer,
      });
    }
    const replayed = await this.history.replay([id], this.config.notify.replayPerSecond);
    if (replayed.length === 0) throw new ApiError('not_replayable', `Notification ${id} changed meanwhile; look at it again`);
    this.signal.queued(1);
    return { replayed: true, id };
  }

  async replayBulk(subscriptionId: string, since: string, source: ReplaySource, dryRun: boolean): Promise<BulkReplayResult> {
    if (!(await this.subscriptions.get(subscriptionId))) throw new ApiError('not_found', `No subscription ${subscriptionId}`);
    const ids = await this.history.replayable(subscriptionId, parseInstant(since)!, source);
    const count = dryRun ? ids.length : (await this.history.replay(ids, this.config.notify.replayPerSecond)).length;
    this.signal.queued(dryRun ? 0 : count);
    return { subscriptionId, source, since, count, dryRun };
  }

  /** For the dead-letter endpoints: replays what it can, and says why not otherwise (never throws a 409). */
  async replayDeadLetter(notificationId: string): Promise<{ replayed: boolean; reason?: string }> {
    try {
      await this.replayOne(notificationId);
      return { replayed: true };
    } catch (error) {
      if (error instanceof ApiError && error.status === 409) return { replayed: false, reason: error.message };
      throw error;
    }
  }
}
