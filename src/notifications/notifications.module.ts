import { Module } from '@nestjs/common';
import { NotificationDeliverer } from './notification-deliverer.service';
import { NotificationHistoryRepository } from './notification-history.repository';
import { NotificationReplayService } from './notification-replay.service';
import { NotificationSender } from './notification-sender';
import { NotificationSignal } from './notification-signal';
import { NotificationRepository } from './notification.repository';
import { NotificationsController } from './notifications.controller';
import { SecretsAtRest } from './secrets-at-rest';
import { HostResolver, SubscriberAddressGuard } from './subscriber-address-guard';
import { SubscriptionRepository } from './subscription.repository';
import { SubscriptionsController } from './subscriptions.controller';
import { SubscriptionsService } from './subscriptions.service';
import { OpsEventRepository } from './ops-event.repository';
import { OpsEvents } from './ops-events.service';
import { DatabaseFailoverNotice } from './database-failover-notice';

/**
 * Change notifications: subscriptions, the outbox the mirror writes fill (mirror/change-notifications.ts), the delivery worker, and
 * replay. The mirror modules import it for NotificationSignal; retention for NotificationHistoryRepository's prunes.
 */
@Module({
  controllers: [SubscriptionsController, NotificationsController],
  providers: [
    NotificationSignal,
    NotificationSender,
    NotificationRepository,
    NotificationHistoryRepository,
    NotificationDeliverer,
    NotificationReplayService,
    SubscriptionRepository,
    SubscriptionsService,
    SecretsAtRest,
    HostResolver,
    SubscriberAddressGuard,
    OpsEventRepository,
    OpsEvents,
    DatabaseFailoverNotice,
  ],
  exports: [
    NotificationSignal,
    NotificationReplayService,
    NotificationDeliverer,
    SubscriptionRepository,
    NotificationHistoryRepository,
    OpsEvents,
    OpsEventRepository,
  ],
})
export class NotificationsModule {}
