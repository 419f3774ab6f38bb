import { Controller, Get, Param, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { ApiError } from '../../common/api-error';
import { ApiErrorResponse, ApiInvalidRequestResponse, ApiNotFoundErrorResponse, BAD_QUERY } from '../../common/error-body.dto';
import type { Db } from '../../database/database.service';
import { ReadDb, ReplicaRead } from '../../database/replica-read';
import { ReadAccess, ReadScope } from '../../common/read-access';
import { ListPostsQuery, PostFieldsQuery } from './dto/list-posts.query';
import { MirroredPostResponse, PostPageResponse } from './dto/post.response';
import { PostsQuery } from './posts.query';
import { AnswersJsonText, JsonText, pageJson } from '../whole-object';

@ApiTags('Mirror')
@ReadAccess()
// Eventual reads go to the read replica, when there is one (DATABASE_READ_URL).
@ReplicaRead()
@Controller('posts')
export class PostsController {
  constructor(private readonly posts: PostsQuery) {}

  @Get()
  @ApiOperation({ summary: 'List mirrored posts, filtered, searched and ordered, a page at a time.' })
  @ApiOkResponse({ type: PostPageResponse })
  @ApiErrorResponse(400, BAD_QUERY)
  @AnswersJsonText()
  async list(@Query() query: ListPostsQuery, @ReadDb() db: Db, @ReadScope() scope: ReadScope): Promise<JsonText> {
    const { data, nextCursor } = await this.posts.list(query, db, scope.narrow(query.workspace));
    return pageJson(data, nextCursor);
  }

  /** A deleted post is still answered (with `deletedAt`); 404 means the mirror never saw it. */
  @Get(':id')
  @ApiOperation({ summary: 'One mirrored post, deleted ones included.' })
  @ApiParam({ name: 'id', description: 'The Pozy post id.', example: '66aa01f3c2b1e4d5f6a7b8c9' })
  @ApiOkResponse({ type: MirroredPostResponse })
  @ApiInvalidRequestResponse('`fields` or `consistency`')
  @ApiNotFoundErrorResponse('the mirror never saw this post (in the workspaces the token may read)')
  @ApiErrorResponse(
    409,
    '`ambiguous_id`: more than one of the workspaces read holds a post of this id (`details` names them); pick one with `workspace`.',
  )
  @AnswersJsonText()
  async get(@Param('id') id: string, @Query() query: PostFieldsQuery, @ReadDb() db: Db, @ReadScope() scope: ReadScope): Promise<JsonText> {
    const post = await this.posts.get(id, query.fields, db, scope.narrow(query.workspace));
    if (!post) throw new ApiError(404, 'not_found', `Post ${id} is not in the mirror`);
    return post;
  }
}
