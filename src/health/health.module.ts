import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { BackfillModule } from '../backfill/backfill.module';
import { DeadLettersModule } from '../dead-letters/dead-letters.module';
import { NotificationsModule } from '../notifications/notifications.module';
import { PozyModule } from '../pozy/pozy.module';
import { ReconcileModule } from '../reconcile/reconcile.module';
import { RunsModule } from '../runs/runs.module';
import { ReceiveModule } from '../receive/receive.module';
import { Draining } from './draining';
import { HealthController } from './health.controller';
import { ReadinessRepository } from './readiness.repository';
import { StatusMetrics } from './status-metrics';
import { ObjectiveWatch } from './objective-watch';
import { StatusSnapshots } from './status-snapshot.service';
import { SyncFiguresRepository } from './sync-figures.repository';
import { SyncStatusController } from './sync-status.controller';
import { SyncStatusService } from './sync-status.service';

@Module({
  // Terminus logs failed checks itself; the 503 body already says what failed.
  imports: [
    TerminusModule.forRoot({ logger: false }),
    ReceiveModule,
    NotificationsModule,
    BackfillModule,
    RunsModule,
    PozyModule,
    DeadLettersModule,
    ReconcileModule,
  ],
  controllers: [HealthController, SyncStatusController],
  providers: [ObjectiveWatch, Draining, ReadinessRepository, SyncFiguresRepository, StatusSnapshots, SyncStatusService, StatusMetrics],
  exports: [Draining, SyncStatusService],
})
export class HealthModule {}
