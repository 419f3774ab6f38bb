import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsIn, IsInt, IsNumber, IsOptional, IsString, Matches, Max, MaxLength, Min } from 'class-validator';
import { IntParam, ListParam } from '../../common/query-params';
import { WorkspaceQuery } from '../../common/workspace-query';
import { CHANGE_TYPES, ChangeType } from '../record-changes';

export const MAX_CHANGE_LIMIT = 1_000;
export const DEFAULT_CHANGE_LIMIT = 100;
export const MAX_WAIT_S = 30;

/** A feed cursor: a position, as decimal digits (it fits a bigint). */
export const CURSOR_PATTERN = /^\d{1,18}$/;

export class ListChangesQuery extends WorkspaceQuery {
  @ApiPropertyOptional({
    description:
      'The cursor of the last change you have (a `cursor` or `nextCursor` this endpoint answered). Without it, the feed ' +
      'starts at the oldest change kept.',
    example: '1042',
  })
  @IsOptional()
  @IsString()
  @Matches(CURSOR_PATTERN, { message: 'after must be a cursor this service answered (decimal digits)' })
  after?: string;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: MAX_CHANGE_LIMIT, default: DEFAULT_CHANGE_LIMIT, example: 100 })
  @IsOptional()
  @IntParam()
  @IsInt()
  @Min(1)
  @Max(MAX_CHANGE_LIMIT)
  limit?: number;

  @ListParam(`Only changes of these types (comma-separated): ${CHANGE_TYPES.join(', ')}.`, 'post.changed,post.deleted')
  @IsIn(CHANGE_TYPES, { each: true, message: `types must hold only ${CHANGE_TYPES.join(', ')}` })
  types?: ChangeType[];

  @ApiPropertyOptional({ maxLength: 200, description: "Only changes of this profile's posts and accounts.", example: '66a9ffee00112233445566aa' })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  profileId?: string;

  @ApiPropertyOptional({ maxLength: 50, description: 'Only changes of posts targeting, or accounts on, this platform.', example: 'instagram' })
  @IsOptional()
  @IsString()
  @MaxLength(50)
  platform?: string;

  @ApiPropertyOptional({
    minimum: 0,
    maximum: MAX_WAIT_S,
    default: 0,
    description: `Long-poll: with no change after the cursor, wait up to this many seconds (at most ${MAX_WAIT_S}) for one, and answer as soon as it comes.`,
    example: 25,
  })
  @IsOptional()
  @Transform(({ value }: { value: unknown }) => (typeof value === 'string' && /^\d+(\.\d+)?$/.test(value) ? Number(value) : value))
  @IsNumber({ allowNaN: false, allowInfinity: false }, { message: `wait must be a number of seconds from 0 to ${MAX_WAIT_S}` })
  @Min(0, { message: `wait must be a number of seconds from 0 to ${MAX_WAIT_S}` })
  @Max(MAX_WAIT_S, { message: `wait must be a number of seconds from 0 to ${MAX_WAIT_S}` })
  wait?: number;

  @ApiPropertyOptional({
    description:
      'Read as this named consumer (POST /admin/consumers): from its committed position, with its own filters, so `after`, `types`, ' +
      '`profileId`, `platform` and `workspace` are refused beside it. A read not committed (POST /changes/commit) is answered again.',
    example: 'crm-sync',
  })
  @IsOptional()
  @IsString()
  @Matches(/^[a-z0-9][a-z0-9_-]{0,62}$/, { message: 'consumer must be a consumer name (1 to 63 lower-case letters, digits, _ or -)' })
  consumer?: string;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 0,
    maximum: 63,
    description: 'With `consumer`: which of its partitions (0 to partitions − 1); required when it has more than one.',
    example: 0,
  })
  @IsOptional()
  @IntParam()
  @IsInt({ message: 'partition must be an integer from 0 to the partitions − 1' })
  @Min(0, { message: 'partition must be an integer from 0 to the partitions − 1' })
  @Max(63, { message: 'partition must be an integer from 0 to the partitions − 1' })
  partition?: number;
}
