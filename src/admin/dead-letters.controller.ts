import { Controller, Get, HttpCode, Param, Post, Query, UseGuards } from '@nestjs/common';
import { ApiAcceptedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiErrorResponse, ApiInvalidRequestResponse, ApiNotFoundErrorResponse } from '../common/error-body.dto';
import { ApiAdminAuth } from '../http/openapi';
import { DeadLetterRepository, ListedDeadLetter } from '../dead-letters/dead-letter.repository';
import { AdminTokenGuard } from '../common/admin-token.guard';
import { DeadLetterIdParams, DeadLetterListQuery, DeadLetterReplayAllQuery } from './dto/dead-letter.query';
import { DeadLetterListResponse, DeadLetterReplayAllResponse, DeadLetterReplayResponse } from './dto/dead-letter.response';
import { DeadLetterReplayService } from './dead-letter-replay.service';
import { AckSpool, SpooledEvent } from '../webhooks/ack-spool';

@ApiTags('Admin: dead letters')
@ApiAdminAuth()
@Controller('admin/dead-letters')
@UseGuards(AdminTokenGuard)
export class DeadLettersController {
  constructor(
    private readonly deadLetters: DeadLetterRepository,
    private readonly spool: AckSpool,
    private readonly replays: DeadLetterReplayService,
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

  /** Replays every letter of the queue not replayed yet; with dryRun, only says how many that would be. */
  @Post('replay')
  @HttpCode(202)
  @ApiOperation({ summary: 'Replay every letter of a queue not replayed yet (or, with dryRun, count them).' })
  @ApiAcceptedResponse({ type: DeadLetterReplayAllResponse })
  @ApiInvalidRequestResponse('`queue` is missing or not `delivery`/`ack`, or `dryRun` is not a boolean')
  @ApiErrorResponse(422, '`invalid_event` (`queue=ack`): PostgreSQL refuses a spooled event.')
  @ApiErrorResponse(503, '`database_unavailable` (`queue=ack`): the database still does not acknowledge.')
  replayAll(@Query() query: DeadLetterReplayAllQuery): Promise<{ queue: string; count: number; replayed: boolean; skipped?: number }> {
    return this.replays.replayAll(query.queue, query.dryRun === true);
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
  @ApiErrorResponse(
    409,
    '`superseded`, `already_pending`, `subscription_deleted`, `not_replayable`: a notification letter that cannot be sent again.',
  )
  @ApiErrorResponse(422, '`invalid_event`: PostgreSQL refuses the spooled event.')
  @ApiErrorResponse(503, '`database_unavailable`: an ack letter, and the database still does not acknowledge.')
  replayOne(@Param() params: DeadLetterIdParams): Promise<{ replayed: true; reconcile?: string; notification?: string; stored?: number }> {
    return this.replays.replayOne(params.id);
  }
}
