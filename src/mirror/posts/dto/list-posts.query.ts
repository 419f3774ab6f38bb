import { ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, IsBoolean, IsIn, IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import { IsInstant } from '../../../common/instant';
import { WorkspaceQuery } from '../../../common/workspace-query';
import { PageQuery } from '../../page.query';
import { BooleanParam, ListParam } from '../../../common/query-params';
import { POST_FIELD_ORDER } from '../post-fields';
import { FieldsParam } from '../../whole-object';
import { IsSearchWithinLimits, SEARCH_LIMITS } from '../post-search';
import { POST_SORTS } from '../post-sort';
import { AsOfParam } from '../../history/dto/history.dto';

export const POST_STATUSES = ['draft', 'scheduled', 'publishing', 'published', 'partial', 'failed', 'cancelled', 'deleted'] as const;

const DATE_FILTER = { format: 'date-time', example: '2026-11-29T00:00:00Z' } as const;

export class ListPostsQuery extends PageQuery {
  @ApiPropertyOptional({
    enum: [...POST_STATUSES],
    description: "Pozy's status, or `deleted`: the posts Pozy answers 404 for.",
    example: 'published',
  })
  @IsOptional()
  @IsIn(POST_STATUSES)
  status?: string;

  @ApiPropertyOptional({ maxLength: 50, description: 'Posts with a target on this platform.', example: 'instagram' })
  @IsOptional()
  @IsString()
  @MaxLength(50)
  platform?: string;

  @ApiPropertyOptional({ maxLength: 200, description: 'Posts with a target on this account.', example: '66a9ffee00112233445566bb' })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  accountId?: string;

  @ApiPropertyOptional({ maxLength: 200, description: 'Posts to an account of this profile.', example: '66a9ffee00112233445566aa' })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  profileId?: string;

  /** Posts Pozy changed (or that were deleted) at or after this time. */
  @ApiPropertyOptional({
    format: 'date-time',
    description: 'Posts whose Pozy `updatedAt`, or deletion, is at or after this time (ISO 8601).',
    example: '2026-11-29T00:00:00Z',
  })
  @IsOptional()
  @IsInstant()
  updatedSince?: string;

  @ApiPropertyOptional({ type: Boolean, default: false, description: 'Include deleted posts (with `deletedAt`).', example: true })
  @IsOptional()
  @BooleanParam()
  @IsBoolean()
  includeDeleted?: boolean;

  @ApiPropertyOptional({
    maxLength: SEARCH_LIMITS.characters,
    description:
      'Full-text search over the title and the content: PostgreSQL\'s `websearch_to_tsquery` syntax (words, "a phrase", `or`, ' +
      '`-word`), in the `simple` configuration: every language is split into words alike, without stemming, so a word ' +
      `matches in its exact form, case aside. At most ${SEARCH_LIMITS.words} words, ${SEARCH_LIMITS.phrases} phrases (in quotes, ` +
      `or words joined like spring-sale), ${SEARCH_LIMITS.ors} \`or\` and ${SEARCH_LIMITS.negated} negated terms, and every ` +
      'alternative needs a word that is not negated.',
    example: 'spring sale',
  })
  @IsOptional()
  @IsString()
  @MaxLength(SEARCH_LIMITS.characters)
  @IsSearchWithinLimits()
  q?: string;

  @ListParam('Posts having any of these tags (comma-separated).', 'launch,spring')
  @ArrayMaxSize(20)
  @MaxLength(100, { each: true })
  tag?: string[];

  @ListParam('Posts having any of these hashtags (comma-separated, as Pozy stores them).', '#spring')
  @ArrayMaxSize(20)
  @MaxLength(100, { each: true })
  hashtag?: string[];

  @ApiPropertyOptional({ maxLength: 50, description: "Pozy's `visibility`: `public`, `private` or `unlisted`.", example: 'public' })
  @IsOptional()
  @IsString()
  @MaxLength(50)
  visibility?: string;

  @ApiPropertyOptional({ maxLength: 50, description: 'Posts with a target that failed with this `errorCategory`.', example: 'auth_expired' })
  @IsOptional()
  @IsString()
  @MaxLength(50)
  errorCategory?: string;

  @ApiPropertyOptional({ type: Boolean, description: 'Posts with (true) or without (false) `mediaItems`.', example: true })
  @IsOptional()
  @BooleanParam()
  @IsBoolean()
  hasMedia?: boolean;

  @ApiPropertyOptional({ ...DATE_FILTER, description: '`scheduledFor` at or after this time (ISO 8601).' })
  @IsOptional()
  @IsInstant()
  scheduledFrom?: string;

  @ApiPropertyOptional({ ...DATE_FILTER, description: '`scheduledFor` at or before this time (ISO 8601).' })
  @IsOptional()
  @IsInstant()
  scheduledTo?: string;

  @ApiPropertyOptional({ ...DATE_FILTER, description: '`publishedAt` at or after this time (ISO 8601).' })
  @IsOptional()
  @IsInstant()
  publishedFrom?: string;

  @ApiPropertyOptional({ ...DATE_FILTER, description: '`publishedAt` at or before this time (ISO 8601).' })
  @IsOptional()
  @IsInstant()
  publishedTo?: string;

  @ApiPropertyOptional({
    enum: POST_SORTS,
    default: 'id:asc',
    description:
      'The order: a field, `:asc` (the default) or `:desc`. Ties are broken by id; posts without the field (a draft has no ' +
      '`scheduledFor`) come after the others in either direction. A cursor holds its order: pass the same `sort` with it.',
    example: 'scheduledFor:desc',
  })
  @IsOptional()
  @Matches(/^(id|scheduledFor|publishedAt|pozyUpdatedAt)(:(asc|desc))?$/, {
    message: 'sort must be id, scheduledFor, publishedAt or pozyUpdatedAt, optionally followed by :asc or :desc',
  })
  sort?: string;

  @FieldsParam(POST_FIELD_ORDER, 'post')
  fields?: string[];
}

/** `GET /posts/:id?fields=`. */
export class PostFieldsQuery extends WorkspaceQuery {
  @FieldsParam(POST_FIELD_ORDER, 'post')
  fields?: string[];

  @AsOfParam('post')
  asOf?: string;
}
