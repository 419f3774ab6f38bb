import { ApiProperty } from '@nestjs/swagger';

const DATE_TIME = { type: String, format: 'date-time' } as const;

/** One target of a post: a platform and the account it publishes to. */
export class PlatformTargetResponse {
  @ApiProperty({ example: 'instagram' })
  platform!: string;

  @ApiProperty({ example: '66a9ffee00112233445566bb' })
  accountId!: string;

  @ApiProperty({ description: "Pozy's status of this target.", example: 'published' })
  status!: string;

  @ApiProperty({ type: String, nullable: true })
  platformPostId!: string | null;

  @ApiProperty({ type: String, nullable: true, example: 'https://www.instagram.com/p/C9xyz/' })
  platformPostUrl!: string | null;

  @ApiProperty({ ...DATE_TIME, nullable: true })
  publishedAt!: string | null;

  @ApiProperty({ type: String, nullable: true })
  errorMessage!: string | null;
}

/** A post as the mirror holds it (a deleted one with `deletedAt`). */
export class MirroredPostResponse {
  @ApiProperty({ description: 'The Pozy id.', example: '66aa01f3c2b1e4d5f6a7b8c9' })
  id!: string;

  @ApiProperty({ description: "Pozy's status.", example: 'published' })
  status!: string;

  @ApiProperty({ type: String, nullable: true, example: 'Hello from Pozy' })
  content!: string | null;

  @ApiProperty({ ...DATE_TIME, nullable: true })
  scheduledFor!: Date | null;

  @ApiProperty({ ...DATE_TIME, nullable: true })
  publishedAt!: Date | null;

  @ApiProperty({ type: [PlatformTargetResponse] })
  platforms!: PlatformTargetResponse[];

  @ApiProperty({ type: [String], description: "The profiles of the post's mirrored accounts.", example: ['66a9ffee00112233445566aa'] })
  profileIds!: string[];

  @ApiProperty({ ...DATE_TIME, nullable: true })
  pozyCreatedAt!: Date | null;

  @ApiProperty({ ...DATE_TIME, nullable: true, description: "Pozy's `updatedAt`." })
  pozyUpdatedAt!: Date | null;

  @ApiProperty({ ...DATE_TIME, nullable: true, description: 'The latest event this row reflects.' })
  lastEventAt!: Date | null;

  @ApiProperty({ ...DATE_TIME, description: 'The last read from Pozy.' })
  syncedAt!: Date;

  @ApiProperty({ ...DATE_TIME, nullable: true, description: 'When the mirror learnt Pozy deleted it.' })
  deletedAt!: Date | null;
}

export class PostPageResponse {
  @ApiProperty({ type: [MirroredPostResponse], description: 'Ordered by id.' })
  data!: MirroredPostResponse[];

  @ApiProperty({ type: String, nullable: true, description: 'Pass as `cursor` for the next page; null on the last.', example: null })
  nextCursor!: string | null;
}
