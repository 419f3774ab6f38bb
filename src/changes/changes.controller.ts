import { Controller, Get, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiErrorResponse, ApiInvalidRequestResponse } from '../common/error-body.dto';
import { ConsistencyQuery } from '../common/read-consistency';
import { ReadAccess, ReadScope } from '../common/read-access';
import type { Db } from '../database/database.service';
import { QUERY_REFUSALS, ReadDb, ReplicaRead } from '../database/replica-read';
import { ChangeHeadResponse, ChangePageResponse } from './dto/change.response';
import { ListChangesQuery } from './dto/list-changes.query';
import { ChangePage, ChangesService } from './changes.service';

@ApiTags('Change feed')
@ReadAccess()
// Eventual reads go to the read replica, when there is one (DATABASE_READ_URL).
@ReplicaRead()
@Controller('changes')
export class ChangesController {
  constructor(private readonly changes: ChangesService) {}

  @Get()
  @ApiOperation({
    summary: "The mirror's changes in the order they committed, after a cursor; long-polls with `wait`.",
    description:
      'Store `nextCursor` once you have applied `data`, and call again with `after=<nextCursor>`. A change that commits ' +
      'late still comes after every cursor already answered, so following the feed never misses one. Within one ' +
      'resource, `sequence` grows with every change: keep the highest you have applied.',
  })
  @ApiOkResponse({ type: ChangePageResponse })
  @ApiInvalidRequestResponse()
  @ApiErrorResponse(
    410,
    '`cursor_expired`: `after` is older than the changes kept (CHANGE_RETENTION_DAYS); `details` gives `oldestCursor` and how to resynchronise.',
  )
  @ApiErrorResponse(503, `\`too_many_waiters\`: this replica already holds CHANGES_MAX_WAITERS long polls (\`wait\`). ${QUERY_REFUSALS}`)
  list(@Query() query: ListChangesQuery, @ReadDb() db: Db, @ReadScope() scope: ReadScope): Promise<ChangePage> {
    return this.changes.list(query, db, scope.narrow(query.workspace));
  }

  @Get('head')
  @ApiOperation({ summary: 'The newest cursor: read the mirror whole, then follow the feed after this to miss nothing.' })
  @ApiOkResponse({ type: ChangeHeadResponse })
  @ApiInvalidRequestResponse()
  head(@Query() _query: ConsistencyQuery, @ReadDb() db: Db): Promise<{ cursor: string }> {
    return this.changes.head(db);
  }
}
