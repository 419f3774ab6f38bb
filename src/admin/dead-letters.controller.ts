import { Controller, Get, HttpCode, Param, Post, Query, UseGuards } from '@nestjs/common';
import { ApiError } from '../common/api-error';
import { DeadLetter, DeadLetterRepository } from '../dead-letters/dead-letter.repository';
import { ResourceType } from '../queue/tasks';
import { AdminTokenGuard } from './admin-token.guard';
import { DeadLetterIdParams, DeadLetterListQuery, DeadLetterReplayAllQuery } from './dto/dead-letter.query';
import { ResyncService } from './resync.service';

/** The acknowledgment queue lives in the local spool, which this version does not have yet. */
function deliveryOnly(queue: string): void {
  if (queue === 'ack') {
    throw new ApiError(501, 'not_implemented', 'The acknowledgment dead-letter queue comes with the local spool, not built yet');
  }
}

@Controller('admin/dead-letters')
@UseGuards(AdminTokenGuard)
export class DeadLettersController {
  constructor(
    private readonly deadLetters: DeadLetterRepository,
    private readonly resync: ResyncService,
  ) {}

  /** Newest first, with the reason, the first and last failure, and the attempts made. */
  @Get()
  async list(@Query() query: DeadLetterListQuery): Promise<{ data: DeadLetter[] }> {
    deliveryOnly(query.queue);
    return { data: await this.deadLetters.list(query.limit ?? 100) };
  }

  /** Replays every letter not replayed yet; with dryRun, only says how many that would be. */
  @Post('replay')
  @HttpCode(202)
  async replayAll(@Query() query: DeadLetterReplayAllQuery): Promise<{ queue: string; count: number; replayed: boolean }> {
    deliveryOnly(query.queue);
    const letters = await this.deadLetters.unreplayed();
    if (query.dryRun !== true) for (const letter of letters) await this.replay(letter);
    return { queue: query.queue, count: letters.length, replayed: query.dryRun !== true };
  }

  /**
   * Replays one letter: its resource is read from Pozy again (forced), like an admin resync. Safe to repeat: a read
   * writes the current truth through the guard, and the event store already holds each event once.
   */
  @Post(':id/replay')
  @HttpCode(202)
  async replayOne(@Param() params: DeadLetterIdParams): Promise<{ replayed: true; reconcile: string }> {
    const letter = await this.deadLetters.get(params.id);
    if (!letter) throw new ApiError(404, 'not_found', `No dead letter ${params.id}`);
    return { replayed: true, reconcile: await this.replay(letter) };
  }

  private async replay(letter: DeadLetter): Promise<string> {
    const { resource, id } = letter.payload as { resource: ResourceType; id: string };
    const key = await this.resync.request(resource, id);
    await this.deadLetters.markReplayed(letter.id);
    return key;
  }
}
