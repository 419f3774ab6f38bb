import { Module } from '@nestjs/common';
import { ChangesModule } from '../../changes/changes.module';
import { HistoryModule } from '../history/history.module';
import { NotificationsModule } from '../../notifications/notifications.module';
import { PostMirrorRepository } from './post-mirror.repository';
import { PostsController } from './posts.controller';
import { PostsQuery } from './posts.query';

@Module({
  imports: [NotificationsModule, ChangesModule, HistoryModule],
  controllers: [PostsController],
  providers: [PostMirrorRepository, PostsQuery],
  exports: [PostMirrorRepository],
})
export class PostsModule {}
