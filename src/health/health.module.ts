import { Module } from '@nestjs/common';
import { NotificationsModule } from '../notifications/notifications.module';
import { WebhooksModule } from '../webhooks/webhooks.module';
import { HealthController } from './health.controller';
import { SyncStatusController } from './sync-status.controller';

@Module({ imports: [WebhooksModule, NotificationsModule], controllers: [HealthController, SyncStatusController] })
export class HealthModule {}
