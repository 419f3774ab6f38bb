import { Controller, Get, HttpCode, Param, Post, Query, UseGuards } from '@nestjs/common';
import { ApiAcceptedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AdminTokenGuard } from '../common/admin-token.guard';
import { ApiError } from '../common/api-error';
import { ApiErrorResponse, ApiInvalidRequestResponse, ApiNotFoundErrorResponse } from '../common/error-body.dto';
import { ApiAdminAuth } from '../http/openapi';
import { ListNotificationsQuery, NotificationIdParams } from './dto/notification.query';
import { NotificationDetailResponse, NotificationListResponse, NotificationReplayResponse } from './dto/notification.response';
import { NotificationDetail, NotificationHistoryRepository, NotificationSummary } from './notification-history.repository';
import { NotificationReplayService } from './notification-replay.service';

@ApiTags('Admin: notifications')
@ApiAdminAuth()
@Controller('admin/notifications')
@UseGuards(AdminTokenGuard)
export class NotificationsController {
  constructor(
    private readonly history: NotificationHistoryRepository,
    private readonly replays: NotificationReplayService,
  ) {}

  /** Newest first, optionally of one subscription or in one state. */
  @Get()
  @ApiOperation({ summary: 'List change notifications, newest first.' })
  @ApiOkResponse({ type: NotificationListResponse })
  @ApiInvalidRequestResponse('`subscriptionId`, `state` or `limit`')
  async list(@Query() query: ListNotificationsQuery): Promise<{ data: NotificationSummary[] }> {
    return { data: await this.history.list({ subscriptionId: query.subscriptionId, state: query.state, limit: query.limit ?? 100 }) };
  }

  /** One notification with its body's data and every attempt (status, duration, error). */
  @Get(':id')
  @ApiOperation({ summary: "One notification with its body's data and every attempt." })
  @ApiOkResponse({ type: NotificationDetailResponse })
  @ApiInvalidRequestResponse('`id` is not a notification id (`msg_` and 32 hex digits)')
  @ApiNotFoundErrorResponse('no notification has this id')
  async get(@Param() params: NotificationIdParams): Promise<NotificationDetail> {
    const notification = await this.history.get(params.id);
    if (!notification) throw new ApiError('not_found', `No notification ${params.id}`);
    return notification;
  }

  /** Sends it again with the same webhook-id (from the history or the dead-letter queue). */
  @Post(':id/replay')
  @HttpCode(202)
  @ApiOperation({ summary: 'Send one notification again, with its original webhook-id.' })
  @ApiAcceptedResponse({ type: NotificationReplayResponse, description: 'Queued to be sent again.' })
  @ApiInvalidRequestResponse('`id` is not a notification id (`msg_` and 32 hex digits)')
  @ApiNotFoundErrorResponse('no notification has this id')
  @ApiErrorResponse({
    superseded: 'a newer version of its resource exists for that subscriber (`details.newer`)',
    already_pending: true,
    subscription_deleted: true,
    not_replayable: true,
  })
  replay(@Param() params: NotificationIdParams): Promise<{ replayed: true; id: string }> {
    return this.replays.replayOne(params.id);
  }
}
