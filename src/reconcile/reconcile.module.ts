import { Module } from '@nestjs/common';
import { DeadLettersModule } from '../dead-letters/dead-letters.module';
import { AccountsModule } from '../mirror/accounts/accounts.module';
import { PostsModule } from '../mirror/posts/posts.module';
import { PozyModule } from '../pozy/pozy.module';
import { ReconcileDispatcher } from './reconcile-dispatcher.service';
import { ReconcileService } from './reconcile.service';
import { ReconcileTask } from './reconcile.task';
import { ResourceStateRepository } from './resource-state.repository';

@Module({
  imports: [PozyModule, PostsModule, AccountsModule, DeadLettersModule],
  providers: [ReconcileTask, ReconcileService, ReconcileDispatcher, ResourceStateRepository],
  exports: [ReconcileDispatcher, ReconcileService],
})
export class ReconcileModule {}
