import { Module } from '@nestjs/common';
import { WebhooksModule } from '../webhooks/webhooks.module';
import { HealthController } from './health.controller';
import { SyncStatusController } from './sync-status.controller';

@Module({ imports: [WebhooksModule], controllers: [HealthController, SyncStatusController] })
export class HealthModule {}
