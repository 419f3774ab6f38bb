import { IsBoolean, IsIn, IsISO8601, IsOptional, IsString, MaxLength } from 'class-validator';
import { PageQuery } from '../../page.query';
import { BooleanParam } from '../../query-params';

export const POST_STATUSES = ['draft', 'scheduled', 'publishing', 'published', 'partial', 'failed', 'cancelled', 'deleted'] as const;

export class ListPostsQuery extends PageQuery {
  @IsOptional()
  @IsIn(POST_STATUSES)
  status?: string;

  @IsOptional()
  @IsString()
  @MaxLength(50)
  platform?: string;

  @IsOptional()
  @IsString()
  @MaxLength(200)
  accountId?: string;

  @IsOptional()
  @IsString()
  @MaxLength(200)
  profileId?: string;

  /** Posts Pozy changed (or that were deleted) at or after this time. */
  @IsOptional()
  @IsISO8601({ strict: true })
  updatedSince?: string;

  @IsOptional()
  @BooleanParam()
  @IsBoolean()
  includeDeleted?: boolean;
}
