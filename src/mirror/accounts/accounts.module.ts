import { Module } from '@nestjs/common';
import { ChangesModule } from '../../changes/changes.module';
import { HistoryModule } from '../history/history.module';
import { PostsModule } from '../posts/posts.module';
import { NotificationsModule } from '../../notifications/notifications.module';
import { AccountMirrorRepository } from './account-mirror.repository';
import { AccountsController } from './accounts.controller';
import { AccountsQuery } from './accounts.query';

@Module({
  imports: [NotificationsModule, ChangesModule, HistoryModule, PostsModule],
  controllers: [AccountsController],
  providers: [AccountMirrorRepository, AccountsQuery],
  exports: [AccountMirrorRepository],
})
export class AccountsModule {}
