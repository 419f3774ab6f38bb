import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query, UseGuards } from '@nestjs/common';
import { ApiCreatedResponse, ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AdminTokenGuard } from '../common/admin-token.guard';
import { ApiErrorResponse, ApiInvalidRequestResponse, ApiNotFoundErrorResponse } from '../common/error-body.dto';
import { ApiAdminAuth } from '../http/openapi';
import { ConsumerPageResponse, ConsumerResponse } from './dto/consumer.response';
import { ConsumerNameParams, CreateConsumerDto, ListConsumersQuery } from './dto/consumer.dto';
import { ConsumersService, ConsumerView } from './consumers.service';

@ApiTags('Admin: consumers')
@ApiAdminAuth()
@Controller('admin/consumers')
@UseGuards(AdminTokenGuard)
export class ConsumersController {
  constructor(private readonly consumers: ConsumersService) {}

  @Post()
  @ApiOperation({
    summary: 'Make a named consumer of the change feed, in 1 to 64 partitions; it starts at the head of the feed.',
    description:
      'Each partition starts at the feed`s head as of now, with `committedAt: null`: the consumer sees the changes made from now on ' +
      '(read the mirror whole first, as after `GET /changes/head`). Read it with `GET /changes?consumer=<name>&partition=<k>`, and ' +
      'commit with `POST /changes/commit`.',
  })
  @ApiCreatedResponse({ type: ConsumerResponse })
  @ApiInvalidRequestResponse('`name`, `types`, `workspaces`, `profileIds`, `platforms`, `partitions`, or an unknown field (also `malformed_json`)')
  @ApiErrorResponse({ consumer_exists: 'a consumer of this name exists' })
  @ApiErrorResponse({ payload_too_large: 'a body over 1 MiB' })
  @ApiErrorResponse({ unsupported_media_type: 'a body that is not `application/json`' })
  create(@Body() body: CreateConsumerDto): Promise<ConsumerView> {
    return this.consumers.create(body);
  }

  @Get()
  @ApiOperation({ summary: 'The named consumers by name, a page at a time, each with its partitions` positions and lag.' })
  @ApiOkResponse({ type: ConsumerPageResponse })
  @ApiInvalidRequestResponse('`limit` is not 1 to 500, `cursor` is not one this service returned, or a parameter is unknown')
  list(@Query() query: ListConsumersQuery): Promise<{ data: ConsumerView[]; nextCursor: string | null }> {
    return this.consumers.list(query.limit, query.cursor);
  }

  @Get(':name')
  @ApiOperation({ summary: 'One named consumer: its filters, and per partition its committed position, lag, last read and status.' })
  @ApiOkResponse({ type: ConsumerResponse })
  @ApiInvalidRequestResponse('`name` is not a consumer name')
  @ApiNotFoundErrorResponse('no consumer has this name')
  get(@Param() params: ConsumerNameParams): Promise<ConsumerView> {
    return this.consumers.get(params.name);
  }

  @Delete(':name')
  @HttpCode(204)
  @ApiOperation({ summary: 'Delete a named consumer: its positions go with it, and retention no longer holds the feed for it.' })
  @ApiNoContentResponse({ description: 'Deleted.' })
  @ApiInvalidRequestResponse('`name` is not a consumer name')
  @ApiNotFoundErrorResponse('no consumer has this name')
  async delete(@Param() params: ConsumerNameParams): Promise<void> {
    await this.consumers.delete(params.name);
  }
}
