import { Controller, Get, HttpCode, Param, Post, Query, UseGuards } from '@nestjs/common';
import { ApiAcceptedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiErrorResponse, ApiInvalidRequestResponse, ApiNotFoundErrorResponse } from '../common/error-body.dto';
import { ApiAdminAuth } from '../http/openapi';
import { DeadLetterRepository, ListedDeadLetter } from '../dead-letters/dead-letter.repository';
import { AdminTokenGuard } from '../common/admin-token.guard';
import { ApiError } from '../common/api-error';
import { DeadLetterReplayRunRepository, ReplayRun } from '../dead-letters/dead-letter-replay-run.repository';
import { DeadLetterIdParams, DeadLetterListQuery, DeadLetterReplayAllQuery, ReplayRunIdParams } from './dto/dead-letter.query';
import {
  DeadLetterListResponse,
  DeadLetterReplayAllResponse,
  DeadLetterReplayResponse,
  DeadLetterReplayRunResponse,
} from './dto/dead-letter.response';
import { DeadLetterReplayRuns } from './dead-letter-replay-runs.service';
import { DeadLetterReplayService } from './dead-letter-replay.service';
import { AckSpool, SpooledEvent } from '../receive/ack-spool';

@ApiTags('Admin: dead letters')
@ApiAdminAuth()
@Controller('admin/dead-letters')
@UseGuards(AdminTokenGuard)
export class DeadLettersController {
  constructor(
    private readonly deadLetters: DeadLetterRepository,
    private readonly spool: AckSpool,
    private readonly replays: DeadLetterReplayService,
    private readonly runs: DeadLetterReplayRuns,
    private readonly replayRuns: DeadLetterReplayRunRepository,
  ) {}

  /**
   * Newest first. `delivery`: reconciles given up on (reason, first and last failure, attempts). `ack`: events the
   * database never acknowledged, held in this replica's local spool (read without the database).
   */
  @Get()
  @ApiOperation({ summary: 'List the dead letters of a queue, newest first.' })
  @ApiOkResponse({ type: DeadLetterListResponse })
  @ApiInvalidRequestResponse('`queue` is missing or not `delivery`/`ack`, or `limit` is not 1 to 500')
  async list(@Query() query: DeadLetterListQuery): Promise<{ data: ListedDeadLetter[] | SpooledEvent[] }> {
    const limit = query.limit ?? 100;
    return { data: query.queue === 'ack' ? this.spool.dead(limit) : await this.deadLetters.list(limit) };
  }

  /**
   * Starts a run that replays every letter of the queue not replayed yet, in batches in the background; answers at
   * once with its id and how many letters it takes. With dryRun, only says how many that would be.
   */
  @Post('replay')
  @HttpCode(202)
  @ApiOperation({
    summary: 'Start replaying every letter of a queue not replayed yet (or, with dryRun, count them).',
    description:
      'The run goes on in the background, in batches; follow it with `GET /admin/dead-letters/replay/{runId}`. One run per queue at a time: ' +
      "`delivery` across every replica, `ack` per replica (its letters are in this replica's spool).",
  })
  @ApiAcceptedResponse({ type: DeadLetterReplayAllResponse })
  @ApiInvalidRequestResponse('`queue` is missing or not `delivery`/`ack`, or `dryRun` is not a boolean')
  @ApiErrorResponse({ replay_running: 'a replay of this queue is running (`delivery`: on some replica; `ack`: here); `details.runId` names it' })
  @ApiErrorResponse({ database_unavailable: '`queue=ack`, and the database does not answer', shutting_down: 'this replica is closing' })
  async replayAll(@Query() query: DeadLetterReplayAllQuery): Promise<{ runId?: string; queue: string; count: number; replayed?: false }> {
    if (query.dryRun === true) return { queue: query.queue, count: await this.replays.count(query.queue), replayed: false };
    const result = await this.runs.start(query.queue);
    if (!result.started) {
      throw new ApiError('replay_running', `A replay of the ${query.queue} dead-letter queue is running`, { runId: result.runningRunId });
    }
    return { runId: result.run.id, queue: result.run.queue, count: result.run.total };
  }

  /** A bulk replay's progress: letters replayed and skipped so far, batches, and how it ended. */
  @Get('replay/:runId')
  @ApiOperation({ summary: "A bulk replay's progress and outcome." })
  @ApiOkResponse({ type: DeadLetterReplayRunResponse })
  @ApiInvalidRequestResponse('`runId` is not a UUID')
  @ApiNotFoundErrorResponse('no replay run has this id')
  async run(@Param() params: ReplayRunIdParams): Promise<ReplayRun> {
    const run = await this.replayRuns.get(params.runId);
    if (!run) throw new ApiError('not_found', `No replay run ${params.runId}`);
    return run;
  }

  /**
   * Replays one letter. A reconcile letter: its resource is read from Pozy again (forced), like an admin resync. A
   * notification letter: it is sent again with its original webhook-id, unless a newer version of its resource has
   * reached the subscriber since (409). An acknowledgment letter: the event is inserted now, with the same idempotent
   * insert. All are safe to repeat.
   */
  @Post(':id/replay')
  @HttpCode(202)
  @ApiOperation({ summary: 'Replay one dead letter: read its resource again, resend its notification, or insert its event.' })
  @ApiAcceptedResponse({ type: DeadLetterReplayResponse })
  @ApiInvalidRequestResponse('`id` is not a UUID')
  @ApiNotFoundErrorResponse('no dead letter has this id')
  // A notification letter that cannot be sent again.
  @ApiErrorResponse({ superseded: true, already_pending: true, subscription_deleted: true, not_replayable: true })
  @ApiErrorResponse({ unstorable_event: 'an ack letter whose event PostgreSQL refuses' })
  @ApiErrorResponse({ database_unavailable: 'an ack letter, and the database still does not acknowledge' })
  replayOne(@Param() params: DeadLetterIdParams): Promise<{ replayed: true; reconcile?: string; notification?: string; stored?: number }> {
    return this.replays.replayOne(params.id);
  }
}
