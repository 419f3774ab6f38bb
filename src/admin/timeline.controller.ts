import { Controller, Get, Param, Query, UseGuards } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AdminTokenGuard } from '../common/admin-token.guard';
import { ApiErrorResponse, ApiInvalidRequestResponse } from '../common/error-body.dto';
import { ApiAdminAuth } from '../http/openapi';
import { ResourceIdParams } from './dto/resource-id.params';
import { TimelineQuery, TimelineResponse } from './dto/timeline.dto';
import { TimelineService } from './timeline.service';

@ApiTags('Admin: timelines')
@ApiAdminAuth()
@Controller('admin')
@UseGuards(AdminTokenGuard)
export class TimelineController {
  constructor(private readonly timelines: TimelineService) {}

  @Get('posts/:id/timeline')
  @ApiOperation({
    summary: "A post's story, oldest first: every event received for it, each reconcile and why, its feed entries, notifications and dead letters.",
  })
  @ApiOkResponse({ type: TimelineResponse })
  @ApiInvalidRequestResponse('`id` is not a Pozy id, `limit` out of 1..500, or `cursor` not one this service returned')
  @ApiErrorResponse({ unknown_workspace: 'no such workspace is mirrored here' })
  post(@Param() params: ResourceIdParams, @Query() query: TimelineQuery): Promise<TimelineResponse> {
    return this.timelines.page({ type: 'post', id: params.id }, query);
  }

  @Get('profiles/:id/timeline')
  @ApiOperation({ summary: "A profile's story: its events and account reads, and its accounts' feed entries, notifications and dead letters." })
  @ApiOkResponse({ type: TimelineResponse })
  @ApiInvalidRequestResponse('`id` is not a Pozy id, `limit` out of 1..500, or `cursor` not one this service returned')
  @ApiErrorResponse({ unknown_workspace: 'no such workspace is mirrored here' })
  profile(@Param() params: ResourceIdParams, @Query() query: TimelineQuery): Promise<TimelineResponse> {
    return this.timelines.page({ type: 'profile', id: params.id }, query);
  }
}
