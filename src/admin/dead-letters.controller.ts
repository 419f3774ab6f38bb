import { Controller, Get, HttpCode, Param, Post, Query, UseGuards } from '@nestjs/common';
import { ApiAcceptedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiError } from '../common/api-error';
import { ApiErrorResponse, ApiInvalidRequestResponse, ApiNotFoundErrorResponse } from '../common/error-body.dto';
import { ApiAdminAuth } from '../http/openapi';
import { DeadLetter, DeadLetterRepository } from '../dead-letters/dead-letter.repository';
import { NotificationReplayService } from '../notifications/notification-replay.service';
import { ResourceType } from '../queue/tasks';
import { AdminTokenGuard } from '../common/admin-token.guard';
import { DeadLetterIdParams, DeadLetterListQuery, DeadLetterReplayAllQuery } from './dto/dead-letter.query';
import { DeadLetterListResponse, DeadLetterReplayAllResponse, DeadLetterReplayResponse } from './dto/dead-letter.response';
import { ResyncService } from './resync.service';
import { AckSpool, SpooledEvent } from '../webhooks/ack-spool';
import { isEventDataError } from '../webhooks/event-data-error';

@ApiTags('Admin: dead letters')
@ApiAdminAuth()
@Controller('admin/dead-letters')
@UseGuards(AdminTokenGuard)
export class DeadLettersController {
  constructor(
    private readonly deadLetters: DeadLetterRepository,
    private readonly resync: ResyncService,
    private readonly spool: AckSpool,
    private readonly notifications: NotificationReplayService,
  ) {}

  /**
   * Newest first. `delivery`: reconciles given up on (reason, first and last failure, attempts). `ack`: events the
   * database never acknowledged, held in this replica's local spool (read without the database).
   */
  @Get()
  @ApiOperation({ summary: 'List the dead letters of a queue, newest first.' })
  @ApiOkResponse({ type: DeadLetterListResponse })
  @ApiInvalidRequestResponse('`queue` is missing or not `delivery`/`ack`, or `limit` is not 1 to 500')
  async list(@Query() query: DeadLetterListQuery): Promise<{ data: DeadLetter[] | SpooledEvent[] }> {
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
  async replayAll(
    @Query() query: DeadLetterReplayAllQuery,
  ): Promise<{ queue: string; count: number; replayed: boolean; skipped?: number }> {
    const dryRun = query.dryRun === true;
    if (query.queue === 'ack') {
      const letters = this.spool.dead(Number.MAX_SAFE_INTEGER);
      if (!dryRun) await this.replaySpooled(letters.map((l) => l.id));
      return { queue: 'ack', count: letters.length, replayed: !dryRun };
    }
    const letters = await this.deadLetters.unreplayed();
    let skipped = 0;
    if (!dryRun) for (const letter of letters) if ((await this.replay(letter)).skipped) skipped += 1;
    // Skipped: notification letters whose resource has a newer version since (replaying would send an older state).
    return { queue: query.queue, count: letters.length, replayed: !dryRun, ...(dryRun ? {} : { skipped }) };
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
  async replayOne(
    @Param() params: DeadLetterIdParams,
  ): Promise<{ replayed: true; reconcile?: string; notification?: string; stored?: number }> {
    if (this.spool.getDead(params.id)) return { replayed: true, stored: (await this.replaySpooled([params.id])).stored };
    const letter = await this.deadLetters.get(params.id);
    if (!letter) throw new ApiError(404, 'not_found', `No dead letter ${params.id}`);
    if (letter.kind === 'notification') {
      const { notificationId } = letter.payload as { notificationId: string };
      await this.notifications.replayOne(notificationId);
      return { replayed: true, notification: notificationId };
    }
    return { replayed: true, reconcile: (await this.replay(letter)).reconcile };
  }

  private async replaySpooled(ids: string[]): Promise<{ stored: number }> {
    try {
      return await this.spool.replay(ids);
    } catch (error) {
      if (isEventDataError(error)) throw new ApiError(422, 'invalid_event', `PostgreSQL refuses this event: ${(error as Error).message}`);
      throw new ApiError(503, 'database_unavailable', `The database still does not acknowledge: ${(error as Error).message}`);
    }
  }

  /** A notification letter is marked replayed by the replay itself; one whose resource has a newer version is skipped. */
  private async replay(letter: DeadLetter): Promise<{ reconcile?: string; skipped?: boolean }> {
    if (letter.kind === 'notification') {
      const { replayed } = await this.notifications.replayDeadLetter((letter.payload as { notificationId: string }).notificationId);
      return { skipped: !replayed };
    }
    const { resource, id } = letter.payload as { resource: ResourceType; id: string };
    const key = await this.resync.request(resource, id);
    await this.deadLetters.markReplayed(letter.id);
    return { reconcile: key };
  }
}
