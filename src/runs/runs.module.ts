import { Module } from '@nestjs/common';
import { ChangesModule } from '../changes/changes.module';
import { AccountsModule } from '../mirror/accounts/accounts.module';
import { PostsModule } from '../mirror/posts/posts.module';
import { NotificationsModule } from '../notifications/notifications.module';
import { PozyModule } from '../pozy/pozy.module';
import { SweepRunRepository } from './sweep-run.repository';
import { SweepRunner } from './import-and-sweep-runner';
import { SweepController } from './sweep.controller';
import { SweepService } from './import-and-sweep.service';
import { TightHeap } from './tight-heap';

/**
 * The runs that list the whole workspace from Pozy, resumable, one at a time: the initial import (a run of kind
 * `import`, started by import-and-sweep.service.ts) and the full sweep (kind `sweep`), both executed by
 * import-and-sweep-runner.ts and kept in `sweep_run` (sweep-run.repository.ts). The backfill is src/backfill/.
 */
@Module({
  imports: [PozyModule, PostsModule, AccountsModule, NotificationsModule, ChangesModule],
  controllers: [SweepController],
  providers: [SweepRunRepository, SweepRunner, SweepService, TightHeap],
  exports: [SweepRunRepository, SweepService],
})
export class RunsModule {}
