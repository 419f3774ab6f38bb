import { NotificationsModule } from '../notifications/notifications.module';
import { ReconcileReadRepository } from './reconcile-read.repository';
import { Module } from '@nestjs/common';
import { DeadLettersModule } from '../dead-letters/dead-letters.module';
import { AccountsModule } from '../mirror/accounts/accounts.module';
import { PostsModule } from '../mirror/posts/posts.module';
import { PozyModule } from '../pozy/pozy.module';
import { ReceiveModule } from '../receive/receive.module';
import { ReconcileDispatcher } from './reconcile-dispatcher.service';
import { ReconcileRequestRepository } from './reconcile-request.repository';
import { ReconcileService } from './reconcile.service';
import { ReconcileTask } from './reconcile.task';

@Module({
  imports: [PozyModule, PostsModule, AccountsModule, DeadLettersModule, ReceiveModule, NotificationsModule],
  providers: [ReconcileTask, ReconcileService, ReconcileDispatcher, ReconcileRequestRepository, ReconcileReadRepository],
  exports: [ReconcileDispatcher, ReconcileService, ReconcileRequestRepository, ReconcileReadRepository],
})
export class ReconcileModule {}
