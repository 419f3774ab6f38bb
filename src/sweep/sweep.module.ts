import { Module } from '@nestjs/common';
import { ChangesModule } from '../changes/changes.module';
import { AccountsModule } from '../mirror/accounts/accounts.module';
import { PostsModule } from '../mirror/posts/posts.module';
import { NotificationsModule } from '../notifications/notifications.module';
import { PozyModule } from '../pozy/pozy.module';
import { SweepRunRepository } from './sweep-run.repository';
import { SweepRunner } from './sweep-runner';
import { SweepController } from './sweep.controller';
import { SweepService } from './sweep.service';

/** The import and the full sweep: runs that list the whole workspace from Pozy, resumable, one at a time. */
@Module({
  imports: [PozyModule, PostsModule, AccountsModule, NotificationsModule, ChangesModule],
  controllers: [SweepController],
  providers: [SweepRunRepository, SweepRunner, SweepService],
  exports: [SweepRunRepository, SweepService],
})
export class SweepModule {}
