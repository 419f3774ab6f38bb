import { Module } from '@nestjs/common';
import { ReconcileModule } from '../reconcile/reconcile.module';
import { ChangesModule } from '../changes/changes.module';
import { BackfillModule } from '../backfill/backfill.module';
import { DeadLettersModule } from '../dead-letters/dead-letters.module';
import { NotificationsModule } from '../notifications/notifications.module';
import { ReceiveModule } from '../receive/receive.module';
import { HistoryModule } from '../mirror/history/history.module';
import { RetentionController } from './retention.controller';
import { RetentionService } from './retention.service';

@Module({
  imports: [ReceiveModule, NotificationsModule, BackfillModule, DeadLettersModule, ChangesModule, ReconcileModule, HistoryModule],
  controllers: [RetentionController],
  providers: [RetentionService],
  exports: [RetentionService],
})
export class RetentionModule {}
