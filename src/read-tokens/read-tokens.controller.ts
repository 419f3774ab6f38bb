import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query, UseGuards } from '@nestjs/common';
import { ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AdminTokenGuard } from '../common/admin-token.guard';
import { ApiErrorResponse, ApiInvalidRequestResponse, ApiNotFoundErrorResponse } from '../common/error-body.dto';
import { ApiAdminAuth } from '../http/openapi';
import { CreateReadTokenDto, ListReadTokensQuery, ReadTokenIdParams } from './dto/read-token.dto';
import { CreatedReadTokenResponse, DeletedReadTokenResponse, ReadTokenPageResponse } from './dto/read-token.response';
import { ReadTokenSummary } from './read-token.repository';
import { ReadTokensService } from './read-tokens.service';

@ApiTags('Admin: read tokens')
@ApiAdminAuth()
@Controller('admin/tokens')
@UseGuards(AdminTokenGuard)
export class ReadTokensController {
  constructor(private readonly tokens: ReadTokensService) {}

  /** 201 with the token, which is never shown again. */
  @Post()
  @ApiOperation({
    summary: 'Make a read token for some workspaces (or every one); answers the token, once.',
    description:
      'The token reads the query endpoints (and the status, without ids or error texts unless it reads every workspace) on every replica ' +
      'within about a second. Once one is live, reads need a token even with API_TOKENS unset or `none`.',
  })
  @ApiCreatedResponse({ type: CreatedReadTokenResponse, description: 'Made. The token is never shown again.' })
  @ApiInvalidRequestResponse('`name`, `workspaces`, or an unknown field (also `malformed_json`: not JSON; `invalid_encoding`: not UTF-8)')
  @ApiErrorResponse({ payload_too_large: 'a body over 1 MiB' })
  @ApiErrorResponse({ unsupported_media_type: 'a body that is not `application/json`' })
  create(@Body() body: CreateReadTokenDto): Promise<Omit<ReadTokenSummary, 'lastUsedAt'> & { token: string }> {
    return this.tokens.create(body.name, body.workspaces, body.consumers);
  }

  @Get()
  @ApiOperation({ summary: 'List the live read tokens made through the API, newest first, a page at a time (never the tokens).' })
  @ApiOkResponse({ type: ReadTokenPageResponse })
  @ApiInvalidRequestResponse('`limit` is not 1 to 500, `cursor` is not one this service returned, or a parameter is unknown')
  list(@Query() query: ListReadTokensQuery): Promise<{ data: ReadTokenSummary[]; nextCursor: string | null }> {
    return this.tokens.list(query.limit, query.cursor);
  }

  /** Kept on record as deleted; refused from now on, with the 403 of a wrong token. */
  @Delete(':id')
  @HttpCode(200)
  @ApiOperation({ summary: 'Delete a read token: refused here at once, on every replica within about a second.' })
  @ApiOkResponse({ type: DeletedReadTokenResponse })
  @ApiInvalidRequestResponse('`id` is not a UUID')
  @ApiNotFoundErrorResponse('no live token has this id (never made, or deleted already)')
  delete(@Param() params: ReadTokenIdParams): Promise<{ id: string; deleted: true; readsOpen: boolean }> {
    return this.tokens.delete(params.id);
  }
}
