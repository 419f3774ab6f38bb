import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query, UseGuards } from '@nestjs/common';
import { ApiAcceptedResponse, ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AdminTokenGuard } from '../common/admin-token.guard';
import { ApiInvalidRequestResponse, ApiNotFoundErrorResponse } from '../common/error-body.dto';
import { ApiAdminAuth } from '../http/openapi';
import { BulkReplayQuery } from './dto/notification.query';
import { CreateSubscriptionDto, RotateSecretDto, SubscriptionIdParams, UpdateSubscriptionDto } from './dto/subscription.dto';
import {
  BulkReplayResponse,
  CreatedSubscriptionResponse,
  DeletedSubscriptionResponse,
  SubscriptionListResponse,
  SubscriptionResponse,
} from './dto/subscription.response';
import { BulkReplayResult, NotificationReplayService } from './notification-replay.service';
import { Subscription } from './subscription.repository';
import { SubscriptionsService } from './subscriptions.service';

const BAD_ID = '`id` is not a UUID';
const NO_SUBSCRIPTION = 'no subscription has this id (or it was deleted)';

@ApiTags('Admin: subscriptions')
@ApiAdminAuth()
@Controller('admin/subscriptions')
@UseGuards(AdminTokenGuard)
export class SubscriptionsController {
  constructor(
    private readonly subscriptions: SubscriptionsService,
    private readonly replays: NotificationReplayService,
  ) {}

  @Get()
  @ApiOperation({ summary: 'List the change-notification subscriptions, with their health.' })
  @ApiOkResponse({ type: SubscriptionListResponse })
  async list(): Promise<{ data: Subscription[] }> {
    return { data: await this.subscriptions.list() };
  }

  /** 201 with the signing secret, which is never shown again. */
  @Post()
  @ApiOperation({ summary: 'Create a change-notification subscription; answers its signing secret, once.' })
  @ApiCreatedResponse({ type: CreatedSubscriptionResponse, description: 'Created. The secret is never shown again.' })
  @ApiInvalidRequestResponse('A body field')
  create(@Body() body: CreateSubscriptionDto): Promise<Subscription & { secret: string }> {
    return this.subscriptions.create(body);
  }

  @Get(':id')
  @ApiOperation({ summary: 'One subscription, with its health.' })
  @ApiOkResponse({ type: SubscriptionResponse })
  @ApiInvalidRequestResponse(BAD_ID)
  @ApiNotFoundErrorResponse(NO_SUBSCRIPTION)
  get(@Param() params: SubscriptionIdParams): Promise<Subscription> {
    return this.subscriptions.get(params.id);
  }

  @Patch(':id')
  @ApiOperation({ summary: 'Change any field of a subscription but its secret (see rotate-secret).' })
  @ApiOkResponse({ type: SubscriptionResponse })
  @ApiInvalidRequestResponse('`id` or a body field')
  @ApiNotFoundErrorResponse(NO_SUBSCRIPTION)
  update(@Param() params: SubscriptionIdParams, @Body() body: UpdateSubscriptionDto): Promise<Subscription> {
    return this.subscriptions.update(params.id, body);
  }

  /** Kept for its history; what it had pending is cancelled. */
  @Delete(':id')
  @ApiOperation({ summary: 'Delete a subscription (kept for its history); its pending notifications are cancelled.' })
  @ApiOkResponse({ type: DeletedSubscriptionResponse })
  @ApiInvalidRequestResponse(BAD_ID)
  @ApiNotFoundErrorResponse(NO_SUBSCRIPTION)
  delete(@Param() params: SubscriptionIdParams): Promise<{ id: string; deleted: true; cancelled: number }> {
    return this.subscriptions.delete(params.id);
  }

  /** 200 with the new signing secret, shown this once; the old one signs too for `overlapHours`. */
  @Post(':id/rotate-secret')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Rotate the signing secret: answers a new one, once; the old one goes on signing beside it for `overlapHours` (default 24).',
  })
  @ApiOkResponse({ type: CreatedSubscriptionResponse, description: 'Rotated. The new secret is never shown again.' })
  @ApiInvalidRequestResponse('`id`, `overlapHours` or `secret`')
  @ApiNotFoundErrorResponse(NO_SUBSCRIPTION)
  rotateSecret(@Param() params: SubscriptionIdParams, @Body() body: RotateSecretDto): Promise<Subscription & { secret: string }> {
    return this.subscriptions.rotateSecret(params.id, body);
  }

  /** Closes the circuit breaker of a paused subscription: what waited is sent now. */
  @Post(':id/resume')
  @HttpCode(200)
  @ApiOperation({ summary: "Close a paused subscription's circuit breaker: what waited is sent now." })
  @ApiOkResponse({ type: SubscriptionResponse, description: 'Resumed; the subscription as it is now.' })
  @ApiInvalidRequestResponse(BAD_ID)
  @ApiNotFoundErrorResponse(NO_SUBSCRIPTION)
  resume(@Param() params: SubscriptionIdParams): Promise<Subscription> {
    return this.subscriptions.resume(params.id);
  }

  /** Replays notifications created since a time, from the dead-letter queue or the history; `dryRun` only counts. */
  @Post(':id/replay')
  @HttpCode(202)
  @ApiOperation({ summary: 'Send again the notifications created since a time, from the dead-letter queue or the history.' })
  @ApiAcceptedResponse({ type: BulkReplayResponse })
  @ApiInvalidRequestResponse('`id`, `since`, `source` or `dryRun`')
  @ApiNotFoundErrorResponse(NO_SUBSCRIPTION)
  replay(@Param() params: SubscriptionIdParams, @Query() query: BulkReplayQuery): Promise<BulkReplayResult> {
    return this.replays.replayBulk(params.id, query.since, query.source, query.dryRun === true);
  }
}
