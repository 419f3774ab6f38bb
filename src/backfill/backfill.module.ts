import { Module } from '@nestjs/common';
import { PozyModule } from '../pozy/pozy.module';
import { ReceiveModule } from '../receive/receive.module';
import { BackfillRunRepository } from './backfill-run.repository';
import { BackfillController } from './backfill.controller';
import { BackfillService } from './backfill.service';

@Module({
  imports: [PozyModule, ReceiveModule],
  controllers: [BackfillController],
  providers: [BackfillService, BackfillRunRepository],
  exports: [BackfillRunRepository, BackfillService],
})
export class BackfillModule {}
