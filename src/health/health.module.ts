import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { BackfillModule } from '../backfill/backfill.module';
import { NotificationsModule } from '../notifications/notifications.module';
import { PozyModule } from '../pozy/pozy.module';
import { SweepModule } from '../sweep/sweep.module';
import { WebhooksModule } from '../webhooks/webhooks.module';
import { Draining } from './draining';
import { HealthController } from './health.controller';
import { SyncFiguresModule } from './sync-figures.module';
import { SyncStatusController } from './sync-status.controller';
import { SyncStatusService } from './sync-status.service';

@Module({
  // Terminus logs failed checks itself; the 503 body already says what failed.
  imports: [TerminusModule.forRoot({ logger: false }), WebhooksModule, NotificationsModule, BackfillModule, SweepModule, PozyModule, SyncFiguresModule],
  controllers: [HealthController, SyncStatusController],
  providers: [Draining, SyncStatusService],
  exports: [Draining, SyncStatusService],
})
export class HealthModule {}
