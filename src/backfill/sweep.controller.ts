import { Controller, HttpCode, Post, Query, UseGuards } from '@nestjs/common';
import { AdminTokenGuard } from '../admin/admin-token.guard';
import { SweepQuery } from './dto/sweep.query';
import { SweepReport, SweepService } from './sweep.service';

@Controller('admin/sweep')
@UseGuards(AdminTokenGuard)
export class SweepController {
  constructor(private readonly sweeper: SweepService) {}

  /** Lists every post and account from Pozy and reconciles the mirror with them; answers when done, with counts. */
  @Post()
  @HttpCode(200)
  sweep(@Query() query: SweepQuery): Promise<SweepReport> {
    return this.sweeper.sweep(query.dryRun === true);
  }
}
