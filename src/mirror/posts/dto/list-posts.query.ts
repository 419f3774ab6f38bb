import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsBoolean, IsIn, IsISO8601, IsOptional, IsString, MaxLength } from 'class-validator';
import { PageQuery } from '../../page.query';
import { BooleanParam } from '../../../common/query-params';

export const POST_STATUSES = ['draft', 'scheduled', 'publishing', 'published', 'partial', 'failed', 'cancelled', 'deleted'] as const;

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
  @IsISO8601({ strict: true })
  updatedSince?: string;

  @ApiPropertyOptional({ type: Boolean, default: false, description: 'Include deleted posts (with `deletedAt`).', example: true })
  @IsOptional()
  @BooleanParam()
  @IsBoolean()
  includeDeleted?: boolean;
}
