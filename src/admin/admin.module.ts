import { Module } from '@nestjs/common';
import { DeadLettersModule } from '../dead-letters/dead-letters.module';
import { NotificationsModule } from '../notifications/notifications.module';
import { PozyModule } from '../pozy/pozy.module';
import { ReconcileModule } from '../reconcile/reconcile.module';
import { ReceiveModule } from '../receive/receive.module';
import { DeadLetterReplayRuns } from './dead-letter-replay-runs.service';
import { DeadLetterReplayService } from './dead-letter-replay.service';
import { DeadLettersController } from './dead-letters.controller';
import { AdminController } from './admin.controller';
import { PozyBudgetController } from './pozy-budget.controller';
import { AdminTokenGuard } from '../common/admin-token.guard';
import { ResyncService } from './resync.service';
import { TimelineController } from './timeline.controller';
import { TimelineRepository } from './timeline.repository';
import { TimelineService } from './timeline.service';

@Module({
  imports: [ReconcileModule, DeadLettersModule, ReceiveModule, NotificationsModule, PozyModule],
  controllers: [AdminController, DeadLettersController, PozyBudgetController, TimelineController],
  providers: [AdminTokenGuard, ResyncService, DeadLetterReplayService, DeadLetterReplayRuns, TimelineService, TimelineRepository],
  exports: [ResyncService],
})
export class AdminModule {}
