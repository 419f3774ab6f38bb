import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query, UseGuards } from '@nestjs/common';
import { AdminTokenGuard } from '../admin/admin-token.guard';
import { BulkReplayQuery } from './dto/notification.query';
import { CreateSubscriptionDto, SubscriptionIdParams, UpdateSubscriptionDto } from './dto/subscription.dto';
import { BulkReplayResult, NotificationReplayService } from './notification-replay.service';
import { Subscription } from './subscription.repository';
import { SubscriptionsService } from './subscriptions.service';

@Controller('admin/subscriptions')
@UseGuards(AdminTokenGuard)
export class SubscriptionsController {
  constructor(
    private readonly subscriptions: SubscriptionsService,
    private readonly replays: NotificationReplayService,
  ) {}

  @Get()
  async list(): Promise<{ data: Subscription[] }> {
    return { data: await this.subscriptions.list() };
  }

  /** 201 with the signing secret, which is never shown again. */
  @Post()
  create(@Body() body: CreateSubscriptionDto): Promise<Subscription & { secret: string }> {
    return this.subscriptions.create(body);
  }

  @Get(':id')
  get(@Param() params: SubscriptionIdParams): Promise<Subscription> {
    return this.subscriptions.get(params.id);
  }

  @Patch(':id')
  update(@Param() params: SubscriptionIdParams, @Body() body: UpdateSubscriptionDto): Promise<Subscription> {
    return this.subscriptions.update(params.id, body);
  }

  /** Kept for its history; what it had pending is cancelled. */
  @Delete(':id')
  delete(@Param() params: SubscriptionIdParams): Promise<{ id: string; deleted: true; cancelled: number }> {
    return this.subscriptions.delete(params.id);
  }

  /** Closes the circuit breaker of a paused subscription: what waited is sent now. */
  @Post(':id/resume')
  resume(@Param() params: SubscriptionIdParams): Promise<Subscription> {
    return this.subscriptions.resume(params.id);
  }

  /** Replays notifications created since a time, from the dead-letter queue or the history; `dryRun` only counts. */
  @Post(':id/replay')
  @HttpCode(202)
  replay(@Param() params: SubscriptionIdParams, @Query() query: BulkReplayQuery): Promise<BulkReplayResult> {
    return this.replays.replayBulk(params.id, query.since, query.source, query.dryRun === true);
  }
}
