import { Controller, Get, Param, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { ApiError } from '../../common/api-error';
import { ApiErrorResponse, ApiInvalidRequestResponse, ApiNotFoundErrorResponse, BAD_QUERY } from '../../common/error-body.dto';
import type { Db } from '../../database/database.service';
import { ReadDb, ReplicaRead } from '../../database/replica-read';
import { ReadAccess, ReadScope } from '../../common/read-access';
import { parseInstant } from '../../common/instant';
import { HistoryService } from '../history/history.service';
import { AccountHistoryResponse, HistoryQuery } from '../history/dto/history.dto';
import { AccountsQuery } from './accounts.query';
import { AnswersJsonText, JsonText } from '../whole-object';
import { pageBytes } from '../page-bytes';
import { AccountPageResponse, MirroredAccountResponse } from './dto/account.response';
import { AccountFieldsQuery, ListAccountsQuery } from './dto/list-accounts.query';

@ApiTags('Mirror')
@ReadAccess()
// Eventual reads go to the read replica, when there is one (DATABASE_READ_URL).
@ReplicaRead()
@Controller('accounts')
export class AccountsController {
  constructor(
    private readonly accounts: AccountsQuery,
    private readonly versions: HistoryService,
  ) {}

  @Get()
  @ApiOperation({ summary: 'List mirrored accounts, filtered and searched, a page at a time (ordered by id).' })
  @ApiOkResponse({ type: AccountPageResponse })
  @ApiErrorResponse(BAD_QUERY)
  @AnswersJsonText()
  async list(@Query() query: ListAccountsQuery, @ReadDb() db: Db, @ReadScope() scope: ReadScope): Promise<Buffer> {
    const { data, nextCursor } = await this.accounts.list(query, db, scope.narrow(query.workspace));
    return pageBytes(data, nextCursor);
  }

  /** A removed account is still answered (with `removedAt`); 404 means the mirror never saw it. */
  @Get(':id')
  @ApiOperation({ summary: 'One mirrored account, removed ones included.' })
  @ApiParam({ name: 'id', description: 'The Pozy account id.', example: '66a9ffee00112233445566bb' })
  @ApiOkResponse({ type: MirroredAccountResponse })
  @ApiInvalidRequestResponse('`fields`, `asOf` or `consistency`')
  @ApiNotFoundErrorResponse('the mirror never saw this account (in the workspaces the token may read), or with `asOf`, held no version of it then')
  @ApiErrorResponse({
    ambiguous_id: 'more than one of the workspaces read holds an account of this id (`details` names them); pick one with `workspace`',
  })
  @AnswersJsonText()
  async get(@Param('id') id: string, @Query() query: AccountFieldsQuery, @ReadDb() db: Db, @ReadScope() scope: ReadScope): Promise<JsonText> {
    const account =
      query.asOf === undefined
        ? await this.accounts.get(id, query.fields, db, scope.narrow(query.workspace))
        : await this.versions.asOf('account', id, parseInstant(query.asOf)!, query.fields, db, scope.narrow(query.workspace));
    if (!account)
      throw new ApiError(
        'not_found',
        query.asOf === undefined ? `Account ${id} is not in the mirror` : `The mirror held no version of account ${id} at ${query.asOf}`,
      );
    return account;
  }

  @Get(':id/history')
  @ApiOperation({ summary: 'Every version of an account the mirror held (kept for HISTORY_RETENTION_DAYS), newest first, a page at a time.' })
  @ApiParam({ name: 'id', description: 'The Pozy account id.', example: '66a9ffee00112233445566bb' })
  @ApiOkResponse({ type: AccountHistoryResponse })
  @ApiErrorResponse(BAD_QUERY)
  @ApiNotFoundErrorResponse('the mirror never saw this account (in the workspaces the token may read)')
  @ApiErrorResponse({ ambiguous_id: 'more than one of the workspaces read holds an account of this id; pick one with `workspace`' })
  history(@Param('id') id: string, @Query() query: HistoryQuery, @ReadDb() db: Db, @ReadScope() scope: ReadScope): Promise<AccountHistoryResponse> {
    return this.versions.page('account', id, query, db, scope.narrow(query.workspace)) as Promise<AccountHistoryResponse>;
  }
}
