import { Controller, Get, HttpCode, Param, Post, Query, UseGuards } from '@nestjs/common';
import { AdminTokenGuard } from '../admin/admin-token.guard';
import { ApiError } from '../common/api-error';
import { ListNotificationsQuery, NotificationIdParams } from './dto/notification.query';
import { NotificationDetail, NotificationHistoryRepository, NotificationSummary } from './notification-history.repository';
import { NotificationReplayService } from './notification-replay.service';

@Controller('admin/notifications')
@UseGuards(AdminTokenGuard)
export class NotificationsController {
  constructor(
    private readonly history: NotificationHistoryRepository,
    private readonly replays: NotificationReplayService,
  ) {}

  /** Newest first, optionally of one subscription or in one state. */
  @Get()
  async list(@Query() query: ListNotificationsQuery): Promise<{ data: NotificationSummary[] }> {
    return { data: await this.history.list({ subscriptionId: query.subscriptionId, state: query.state, limit: query.limit ?? 100 }) };
  }

  /** One notification with its body's data and every attempt (status, duration, error). */
  @Get(':id')
  async get(@Param() params: NotificationIdParams): Promise<NotificationDetail> {
    const notification = await this.history.get(params.id);
    if (!notification) throw new ApiError(404, 'not_found', `No notification ${params.id}`);
    return notification;
  }

  /** Sends it again with the same webhook-id (from the history or the dead-letter queue). */
  @Post(':id/replay')
  @HttpCode(202)
  replay(@Param() params: NotificationIdParams): Promise<{ replayed: true; id: string }> {
    return this.replays.replayOne(params.id);
  }
}
