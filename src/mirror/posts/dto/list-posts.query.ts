import { IsBoolean, IsIn, IsInt, IsISO8601, IsOptional, IsString, Max, MaxLength, Min } from 'class-validator';
import { BooleanParam, IntParam } from '../../query-params';

export const POST_STATUSES = ['draft', 'scheduled', 'publishing', 'published', 'partial', 'failed', 'cancelled', 'deleted'] as const;

export class ListPostsQuery {
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

  @IsOptional()
  @IntParam()
  @IsInt()
  @Min(1)
  @Max(500)
  limit?: number;

  @IsOptional()
  @IsString()
  cursor?: string;
}
