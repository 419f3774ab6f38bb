import { Controller, Get, HttpCode, Param, Post, UseGuards } from '@nestjs/common';
import { ApiAcceptedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AdminTokenGuard } from '../common/admin-token.guard';
import { ApiError } from '../common/api-error';
import { ApiErrorResponse, ApiInvalidRequestResponse, ApiNotFoundErrorResponse } from '../common/error-body.dto';
import { ApiAdminAuth } from '../http/openapi';
import { BackfillRun, BackfillRunRepository } from './backfill-run.repository';
import { BackfillService } from './backfill.service';
import { BackfillRunResponse, BackfillStartedResponse } from './dto/backfill.response';
import { RunIdParams } from './dto/run-id.params';

@ApiTags('Admin: backfill and sweep')
@ApiAdminAuth()
@Controller('admin/backfill')
@UseGuards(AdminTokenGuard)
export class BackfillController {
  constructor(
    private readonly backfill: BackfillService,
    private readonly runs: BackfillRunRepository,
  ) {}

  /** Starts a run now; 409 while one is running (on any replica). */
  @Post()
  @HttpCode(202)
  @ApiOperation({ summary: "Start a backfill from Pozy's delivery logs now." })
  @ApiAcceptedResponse({ type: BackfillStartedResponse })
  @ApiErrorResponse({ backfill_running: 'a backfill is already running on some replica; `details.runId` names it' })
  async start(): Promise<{ runId: string }> {
    const result = await this.backfill.start('admin');
    if (!result.started) {
      throw new ApiError('backfill_running', 'A backfill is already running', { runId: result.runningRunId });
    }
    return { runId: result.runId };
  }

  /** A run's progress: rows scanned and events recovered so far, and how it ended. */
  @Get(':runId')
  @ApiOperation({ summary: "A backfill run's progress and outcome." })
  @ApiOkResponse({ type: BackfillRunResponse })
  @ApiInvalidRequestResponse('`runId` is not a UUID')
  @ApiNotFoundErrorResponse('no backfill run has this id')
  async get(@Param() params: RunIdParams): Promise<BackfillRun> {
    const run = await this.runs.get(params.runId);
    if (!run) throw new ApiError('not_found', `No backfill run ${params.runId}`);
    return run;
  }
}
