import { Body, Controller, Get, HttpCode, Param, Post, Query, UseGuards } from '@nestjs/common';
import { ApiAcceptedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AdminTokenGuard } from '../common/admin-token.guard';
import { ApiError } from '../common/api-error';
import { ApiErrorResponse, ApiInvalidRequestResponse, ApiNotFoundErrorResponse } from '../common/error-body.dto';
import { ApiAdminAuth } from '../http/openapi';
import { SweepRunIdParams } from './dto/run-id.params';
import { runView, SweepRunResponse, SweepStartedResponse } from './dto/sweep-run.response';
import { SweepQuery } from './dto/sweep.query';
import { SweepRunRepository } from './sweep-run.repository';
import { SweepService } from './import-and-sweep.service';

@ApiTags('Admin: backfill and sweep')
@ApiAdminAuth()
@Controller('admin/sweep')
@UseGuards(AdminTokenGuard)
export class SweepController {
  constructor(
    private readonly sweeps: SweepService,
    private readonly runs: SweepRunRepository,
  ) {}

  /** Starts a full sweep in the background; 409 while a sweep or the import runs (on any replica). */
  @Post()
  @HttpCode(202)
  @ApiOperation({ summary: 'Start the full sweep: list every account and post from Pozy and reconcile the mirror with them.' })
  @ApiAcceptedResponse({ type: SweepStartedResponse, description: 'Started; follow it with `GET /admin/sweep/{runId}`.' })
  @ApiInvalidRequestResponse('`dryRun` is not a boolean, or an unknown query parameter, or a body (`dryRun` goes in the query)')
  @ApiErrorResponse({ sweep_running: 'a sweep or the import is running on some replica; `details.runId` names it' })
  async start(@Query() query: SweepQuery, @Body() body: unknown): Promise<SweepStartedResponse> {
    // A `{"dryRun": true}` body would otherwise start a sweep that writes.
    if (body !== undefined) throw new ApiError('invalid_request', 'POST /admin/sweep takes no body: pass dryRun in the query (?dryRun=true)');
    const result = await this.sweeps.start('admin', query.dryRun === true);
    if (!result.started) {
      throw new ApiError('sweep_running', 'A sweep or the import is already running', { runId: result.runningRunId });
    }
    return { runId: result.runId };
  }

  @Get(':runId')
  @ApiOperation({ summary: "A sweep's (or the import's) progress, counts and outcome." })
  @ApiOkResponse({ type: SweepRunResponse })
  @ApiInvalidRequestResponse('`runId` is not a UUID')
  @ApiNotFoundErrorResponse('no sweep or import run has this id')
  async get(@Param() params: SweepRunIdParams): Promise<SweepRunResponse> {
    const run = await this.runs.get(params.runId);
    if (!run) throw new ApiError('not_found', `No sweep run ${params.runId}`);
    return runView(run);
  }
}
