import { Module } from '@nestjs/common';
import { AccountsModule } from '../mirror/accounts/accounts.module';
import { PostsModule } from '../mirror/posts/posts.module';
import { PozyModule } from '../pozy/pozy.module';
import { WebhooksModule } from '../webhooks/webhooks.module';
import { BackfillRunRepository } from './backfill-run.repository';
import { BackfillController } from './backfill.controller';
import { BackfillService } from './backfill.service';
import { SweepController } from './sweep.controller';
import { SweepService } from './sweep.service';

@Module({
  imports: [PozyModule, WebhooksModule, PostsModule, AccountsModule],
  controllers: [BackfillController, SweepController],
  providers: [BackfillService, BackfillRunRepository, SweepService],
  exports: [BackfillRunRepository],
})
export class BackfillModule {}
