import { Controller, Get, Param, Query } from '@nestjs/common';
import { ApiError } from '../../common/api-error';
import { ListPostsQuery } from './dto/list-posts.query';
import { MirroredPost, PostsQuery } from './posts.query';

@Controller('posts')
export class PostsController {
  constructor(private readonly posts: PostsQuery) {}

  @Get()
  list(@Query() query: ListPostsQuery): Promise<{ data: MirroredPost[]; nextCursor: string | null }> {
    return this.posts.list(query);
  }

  /** A deleted post is still answered (with `deletedAt`); 404 means the mirror never saw it. */
  @Get(':id')
  async get(@Param('id') id: string): Promise<MirroredPost> {
    const post = await this.posts.get(id);
    if (!post) throw new ApiError(404, 'not_found', `Post ${id} is not in the mirror`);
    return post;
  }
}
