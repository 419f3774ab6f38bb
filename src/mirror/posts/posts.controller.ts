import { Controller, Get, Param, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { ApiError } from '../../common/api-error';
import { ApiErrorResponse, ApiInvalidRequestResponse, ApiNotFoundErrorResponse, BAD_QUERY } from '../../common/error-body.dto';
import type { Db } from '../../database/database.service';
import { ReadDb, ReplicaRead } from '../../database/replica-read';
import { ReadAccess, ReadScope } from '../../common/read-access';
import { parseInstant } from '../../common/instant';
import { HistoryService } from '../history/history.service';
import { PostHistoryResponse, HistoryQuery } from '../history/dto/history.dto';
import { ListPostsQuery, PostFieldsQuery } from './dto/list-posts.query';
import { MirroredPostResponse, PostPageResponse } from './dto/post.response';
import { PostsQuery } from './posts.query';
import { AnswersJsonText, JsonText } from '../whole-object';
import { pageBytes } from '../page-bytes';

@ApiTags('Mirror')
@ReadAccess()
// Eventual reads go to the read replica, when there is one (DATABASE_READ_URL).
@ReplicaRead()
@Controller('posts')
export class PostsController {
  constructor(
    private readonly posts: PostsQuery,
    private readonly versions: HistoryService,
  ) {}

  @Get()
  @ApiOperation({ summary: 'List mirrored posts, filtered, searched and ordered, a page at a time.' })
  @ApiOkResponse({ type: PostPageResponse })
  @ApiErrorResponse(BAD_QUERY)
  @AnswersJsonText()
  async list(@Query() query: ListPostsQuery, @ReadDb() db: Db, @ReadScope() scope: ReadScope): Promise<Buffer> {
    const { data, nextCursor } = await this.posts.list(query, db, scope.narrow(query.workspace));
    return pageBytes(data, nextCursor);
  }

  /** A deleted post is still answered (with `deletedAt`); 404 means the mirror never saw it. */
  @Get(':id')
  @ApiOperation({ summary: 'One mirrored post, deleted ones included.' })
  @ApiParam({ name: 'id', description: 'The Pozy post id.', example: '66aa01f3c2b1e4d5f6a7b8c9' })
  @ApiOkResponse({ type: MirroredPostResponse })
  @ApiInvalidRequestResponse('`fields`, `asOf` or `consistency`')
  @ApiNotFoundErrorResponse('the mirror never saw this post (in the workspaces the token may read), or with `asOf`, held no version of it then')
  @ApiErrorResponse({
    ambiguous_id: 'more than one of the workspaces read holds a post of this id (`details` names them); pick one with `workspace`',
  })
  @AnswersJsonText()
  async get(@Param('id') id: string, @Query() query: PostFieldsQuery, @ReadDb() db: Db, @ReadScope() scope: ReadScope): Promise<JsonText> {
    const post =
      query.asOf === undefined
        ? await this.posts.get(id, query.fields, db, scope.narrow(query.workspace))
        : await this.versions.asOf('post', id, parseInstant(query.asOf)!, query.fields, db, scope.narrow(query.workspace));
    if (!post)
      throw new ApiError(
        'not_found',
        query.asOf === undefined ? `Post ${id} is not in the mirror` : `The mirror held no version of post ${id} at ${query.asOf}`,
      );
    return post;
  }

  @Get(':id/history')
  @ApiOperation({ summary: 'Every version of a post the mirror held (kept for HISTORY_RETENTION_DAYS), newest first, a page at a time.' })
  @ApiParam({ name: 'id', description: 'The Pozy post id.', example: '66aa01f3c2b1e4d5f6a7b8c9' })
  @ApiOkResponse({ type: PostHistoryResponse })
  @ApiErrorResponse(BAD_QUERY)
  @ApiNotFoundErrorResponse('the mirror never saw this post (in the workspaces the token may read)')
  @ApiErrorResponse({ ambiguous_id: 'more than one of the workspaces read holds a post of this id; pick one with `workspace`' })
  history(@Param('id') id: string, @Query() query: HistoryQuery, @ReadDb() db: Db, @ReadScope() scope: ReadScope): Promise<PostHistoryResponse> {
    return this.versions.page('post', id, query, db, scope.narrow(query.workspace)) as Promise<PostHistoryResponse>;
  }
}
