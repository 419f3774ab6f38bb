import { Controller, HttpCode, Post, Query, UseGuards } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AdminTokenGuard } from '../admin/admin-token.guard';
import { ApiInvalidRequestResponse } from '../common/error-body.dto';
import { ApiAdminAuth } from '../http/openapi';
import { SweepQuery } from './dto/sweep.query';
import { SweepReportResponse } from './dto/sweep.response';
import { SweepReport, SweepService } from './sweep.service';

@ApiTags('Admin: backfill and sweep')
@ApiAdminAuth()
@Controller('admin/sweep')
@UseGuards(AdminTokenGuard)
export class SweepController {
  constructor(private readonly sweeper: SweepService) {}

  /** Lists every post and account from Pozy and reconciles the mirror with them; answers when done, with counts. */
  @Post()
  @HttpCode(200)
  @ApiOperation({ summary: 'Sweep: list every post and account from Pozy and reconcile the mirror with them.' })
  @ApiOkResponse({ type: SweepReportResponse, description: 'Answered when the sweep is done.' })
  @ApiInvalidRequestResponse('`dryRun` is not a boolean, or an unknown query parameter')
  sweep(@Query() query: SweepQuery): Promise<SweepReport> {
    return this.sweeper.sweep(query.dryRun === true);
  }
}
