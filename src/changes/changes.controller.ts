import { Body, Controller, Get, HttpCode, Post, Query } from '@nestjs/common';
import { ApiExtraModels, ApiOkResponse, ApiOperation, ApiTags, getSchemaPath } from '@nestjs/swagger';
import { ApiError } from '../common/api-error';
import { ApiErrorResponse, ApiInvalidRequestResponse } from '../common/error-body.dto';
import { ConsistencyQuery } from '../common/read-consistency';
import { ConsumerRoute, ReadAccess, ReadConsumers, ReadScope } from '../common/read-access';
import type { Db } from '../database/database.service';
import { QUERY_REFUSALS, ReadDb, ReplicaRead } from '../database/replica-read';
import { ChangeHeadResponse, ChangePageResponse } from './dto/change.response';
import { ListChangesQuery } from './dto/list-changes.query';
import { ChangePage, ChangesService } from './changes.service';
import { CommitAnswer, ConsumerPage, ConsumersService } from './consumers.service';
import { CommitAnswerResponse, ConsumerChangePageResponse } from './dto/consumer.response';
import { CommitConsumerDto } from './dto/consumer.dto';

@ApiTags('Change feed')
@ReadAccess()
// Eventual reads go to the read replica, when there is one (DATABASE_READ_URL).
@ReplicaRead()
@Controller('changes')
export class ChangesController {
  constructor(
    private readonly changes: ChangesService,
    private readonly consumers: ConsumersService,
  ) {}

  @Get()
  @ApiOperation({
    summary: "The mirror's changes in the order they committed, after a cursor; long-polls with `wait`.",
    description:
      'Store `nextCursor` once you have applied `data`, and call again with `after=<nextCursor>`. A change that commits ' +
      'late still comes after every cursor already answered, so following the feed never misses one. Within one ' +
      'resource, `sequence` grows with every change: keep the highest you have applied.',
  })
  @ApiExtraModels(ChangePageResponse, ConsumerChangePageResponse)
  @ApiOkResponse({
    description: 'With `consumer`: the page carries `consumer` and `partition` too.',
    schema: { oneOf: [{ $ref: getSchemaPath(ChangePageResponse) }, { $ref: getSchemaPath(ConsumerChangePageResponse) }] },
  })
  @ApiInvalidRequestResponse(
    'A parameter (with `consumer`: `after` and the filters are refused, `partition` is required past one partition and below their number)',
  )
  @ApiErrorResponse({
    consumer_not_allowed: 'the token reads other consumers',
    consumer_token: 'a token limited to consumers reads only with `consumer`',
  })
  @ApiErrorResponse({ not_found: 'no consumer of this name (or none the token may read)' })
  @ApiErrorResponse({
    cursor_expired:
      '`after` is older than the changes kept (CHANGE_RETENTION_DAYS), or the consumer expired (CONSUMER_MAX_LAG_DAYS); `details` gives `oldestCursor` and how to resynchronise',
  })
  @ApiErrorResponse({ too_many_waiters: 'this replica already holds CHANGES_MAX_WAITERS long polls (`wait`)', ...QUERY_REFUSALS })
  @ConsumerRoute()
  list(
    @Query() query: ListChangesQuery,
    @ReadDb() db: Db,
    @ReadScope() scope: ReadScope,
    @ReadConsumers() consumers: readonly string[] | undefined,
  ): Promise<ChangePage | ConsumerPage> {
    if (query.consumer !== undefined) return this.consumers.read(query, db, scope, consumers);
    if (query.partition !== undefined)
      throw new ApiError('invalid_request', 'Invalid request: partition: partition is only read with consumer', [
        { field: 'partition', problems: ['partition is only read with consumer'] },
      ]);
    if (consumers !== undefined) throw new ApiError('consumer_token', `This token reads only with consumer= (${consumers.join(', ')})`);
    return this.changes.list(query, db, scope.narrow(query.workspace));
  }

  /** On the primary, whatever the reads' consistency: it writes. */
  @Post('commit')
  @HttpCode(200)
  @ApiOperation({
    summary: "Commit a named consumer's partition: its reads go on after `cursor` (the `nextCursor` of the entries applied).",
    description:
      'Moves forward only: the same cursor again answers 200 and changes nothing; an earlier one is refused (409). A partition that ' +
      'expired is active again at any cursor still kept: after resynchronising (GET /changes/head, then the full reads), commit the head cursor.',
  })
  @ApiOkResponse({ type: CommitAnswerResponse })
  @ApiInvalidRequestResponse('`consumer`, `partition`, `cursor` (also `cursor_beyond_head`: past the newest position; `malformed_json`)')
  @ApiErrorResponse({ consumer_not_allowed: 'the token reads other consumers' })
  @ApiErrorResponse({ not_found: 'no consumer of this name (or none the token may read)' })
  @ApiErrorResponse({ cursor_behind_committed: 'before the committed position; `details.committed` gives it' })
  @ApiErrorResponse({ cursor_expired: 'the partition expired and the cursor is older than the changes kept' })
  @ApiErrorResponse({ payload_too_large: 'a body over 1 MiB' })
  @ConsumerRoute()
  commit(
    @Body() body: CommitConsumerDto,
    @ReadScope() scope: ReadScope,
    @ReadConsumers() consumers: readonly string[] | undefined,
  ): Promise<CommitAnswer> {
    return this.consumers.commit(body, scope, consumers);
  }

  @Get('head')
  @ApiOperation({ summary: 'The newest cursor: read the mirror whole, then follow the feed after this to miss nothing.' })
  @ApiOkResponse({ type: ChangeHeadResponse })
  // A token limited to consumers reads it too: it resumes an expired consumer by committing the head.
  @ConsumerRoute()
  @ApiInvalidRequestResponse()
  head(@Query() _query: ConsistencyQuery, @ReadDb() db: Db): Promise<{ cursor: string }> {
    return this.changes.head(db);
  }
}
