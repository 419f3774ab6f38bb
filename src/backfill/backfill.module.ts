import { Module } from '@nestjs/common';
import { PozyModule } from '../pozy/pozy.module';
import { WebhooksModule } from '../webhooks/webhooks.module';
import { BackfillRunRepository } from './backfill-run.repository';
import { BackfillController } from './backfill.controller';
import { BackfillService } from './backfill.service';

@Module({
  imports: [PozyModule, WebhooksModule],
  controllers: [BackfillController],
  providers: [BackfillService, BackfillRunRepository],
  exports: [BackfillRunRepository, BackfillService],
})
export class BackfillModule {}
