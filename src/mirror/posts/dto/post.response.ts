import { ApiExtraModels, ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

const DATE_TIME = { type: String, format: 'date-time' } as const;

/** One target of a post: a platform and the account it publishes to. */
export class PlatformTargetResponse {
  @ApiProperty({ example: 'instagram' })
  platform!: string;

  @ApiProperty({ example: '66a9ffee00112233445566bb' })
  accountId!: string;

  @ApiProperty({ description: "Pozy's status of this target.", example: 'published' })
  status!: string;

  @ApiPropertyOptional({ type: String, nullable: true })
  platformPostId?: string | null;

  @ApiPropertyOptional({ type: String, nullable: true, example: 'https://www.instagram.com/p/C9xyz/' })
  platformPostUrl?: string | null;

  @ApiPropertyOptional({ ...DATE_TIME, nullable: true })
  publishedAt?: string | null;

  @ApiPropertyOptional({ type: String, nullable: true })
  errorMessage?: string | null;

  @ApiPropertyOptional({
    description:
      'Why the target failed: `auth_expired`, `user_content`, `user_abuse`, `account_issue`, `platform_rejected`, `platform_error`, ' +
      '`platform_rate_limit`, `quota_exhausted`, `system_error` or `unknown`.',
    example: 'auth_expired',
  })
  errorCategory?: string;

  @ApiPropertyOptional({ description: '`user`, `platform` or `system`.', example: 'user' })
  errorSource?: string;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    description: "The platform's own error (Meta only): `{code?, subcode?, message}`.",
  })
  platformError?: Record<string, unknown>;

  @ApiPropertyOptional({ description: "This target's own text, instead of the post's." })
  customContent?: string;

  @ApiPropertyOptional({ type: 'array', items: { type: 'object', additionalProperties: true }, description: "This target's own media." })
  customMedia?: unknown[];

  @ApiPropertyOptional({ ...DATE_TIME })
  removedFromPlatformAt?: string;
}

/** One of a post's media. */
export class MediaItemResponse {
  @ApiProperty({ description: '`image`, `video`, `gif` or `document`.', example: 'image' })
  type!: string;

  @ApiProperty({ example: 'https://media.pozy.ai/66aa01f3/spring.jpg' })
  url!: string;

  @ApiPropertyOptional()
  altText?: string;

  @ApiPropertyOptional()
  thumbnail?: string;
}

/**
 * A post as the mirror holds it (a deleted one with `deletedAt`): every field of Pozy's answer under Pozy's names, fields
 * this document does not list included, except `id` for `_id` and `accountId` always the plain id; then the mirror's
 * own fields. `fields=` asks for fewer.
 */
@ApiExtraModels(PlatformTargetResponse, MediaItemResponse)
export class MirroredPostResponse {
  @ApiProperty({ description: "The Pozy id (Pozy's `_id`).", example: '66aa01f3c2b1e4d5f6a7b8c9' })
  id!: string;

  @ApiPropertyOptional({ description: 'The Pozy user who owns the post.', example: '66a9ffee00112233445566cc' })
  userId?: string;

  @ApiProperty({ type: String, nullable: true, example: 'Spring sale' })
  title!: string | null;

  @ApiProperty({ type: String, nullable: true, example: 'Hello from Pozy' })
  content!: string | null;

  @ApiProperty({ description: "Pozy's status, or `deleted` for a post only ever seen deleted.", example: 'published' })
  status!: string;

  @ApiProperty({ ...DATE_TIME, nullable: true })
  scheduledFor!: string | null;

  @ApiPropertyOptional({ description: 'IANA time zone.', example: 'UTC' })
  timezone?: string;

  @ApiProperty({ ...DATE_TIME, nullable: true })
  publishedAt!: string | null;

  @ApiProperty({ type: [PlatformTargetResponse] })
  platforms!: PlatformTargetResponse[];

  @ApiPropertyOptional({ type: [MediaItemResponse] })
  mediaItems?: MediaItemResponse[];

  @ApiProperty({ type: [String], example: ['launch'] })
  tags!: string[];

  @ApiProperty({ type: [String], example: ['#spring'] })
  hashtags!: string[];

  @ApiPropertyOptional({ type: [String], example: ['@pozy'] })
  mentions?: string[];

  @ApiProperty({ type: String, nullable: true, description: '`public`, `private` or `unlisted`.', example: 'public' })
  visibility!: string | null;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    description: "The caller's own data, as given to Pozy.",
    example: { crmId: 'A-1' },
  })
  metadata?: Record<string, unknown>;

  @ApiPropertyOptional({ type: 'object', additionalProperties: true, description: "Pozy's recycling settings." })
  recycling?: Record<string, unknown>;

  @ApiPropertyOptional({ description: 'The post this one was recycled from.' })
  recycledFromPostId?: string;

  @ApiPropertyOptional({ description: 'The profile whose queue scheduled it (queued posts only).' })
  queuedFromProfile?: string;

  @ApiPropertyOptional({ description: 'The queue that scheduled it (queued posts only).' })
  queueId?: string;

  @ApiProperty({ ...DATE_TIME, nullable: true, description: "Pozy's `createdAt`." })
  createdAt!: string | null;

  @ApiProperty({ ...DATE_TIME, nullable: true, description: "Pozy's `updatedAt`." })
  updatedAt!: string | null;

  @ApiProperty({ type: [String], description: "The mirror's: the profiles of the post's mirrored accounts.", example: ['66a9ffee00112233445566aa'] })
  profileIds!: string[];

  @ApiProperty({ ...DATE_TIME, nullable: true, description: "The mirror's: Pozy's `createdAt`." })
  pozyCreatedAt!: string | null;

  @ApiProperty({ ...DATE_TIME, nullable: true, description: "The mirror's: Pozy's `updatedAt`, the version it orders writes by." })
  pozyUpdatedAt!: string | null;

  @ApiProperty({ ...DATE_TIME, nullable: true, description: "The mirror's: the latest event this row reflects." })
  lastEventAt!: string | null;

  @ApiProperty({ ...DATE_TIME, description: "The mirror's: the last read from Pozy." })
  syncedAt!: string;

  @ApiProperty({ ...DATE_TIME, nullable: true, description: "The mirror's: when it learnt Pozy deleted the post." })
  deletedAt!: string | null;

  @ApiProperty({ description: "The mirror's: counts the changes of the mirrored post (the version notifications carry).", example: 3 })
  sequence!: number;
}

export class PostPageResponse {
  @ApiProperty({ type: [MirroredPostResponse], description: 'In the order `sort` asked for (by id by default).' })
  data!: MirroredPostResponse[];

  @ApiProperty({ type: String, nullable: true, description: 'Pass as `cursor` for the next page; null on the last.', example: null })
  nextCursor!: string | null;
}
