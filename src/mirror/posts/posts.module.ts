import { Module } from '@nestjs/common';
import { PostMirrorRepository } from './post-mirror.repository';
import { PostsController } from './posts.controller';
import { PostsQuery } from './posts.query';

@Module({ controllers: [PostsController], providers: [PostMirrorRepository, PostsQuery], exports: [PostMirrorRepository] })
export class PostsModule {}
