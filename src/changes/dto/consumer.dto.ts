import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import {
  ArrayMaxSize,
  ArrayMinSize,
  ArrayUnique,
  IsArray,
  IsIn,
  IsInt,
  IsOptional,
  IsString,
  Matches,
  Max,
  MaxLength,
  Min,
  MinLength,
} from 'class-validator';
import { LimitParam } from '../../common/query-params';
import { WORKSPACE_ID } from '../../common/workspace-id';
import { CHANGE_TYPES, ChangeType } from '../record-changes';
import { CURSOR_PATTERN } from './list-changes.query';

/** A consumer's name: a slug, short enough for a metric label and a URL path segment. */
export const CONSUMER_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;
const CONSUMER_NAME_RULE = '1 to 63 lower-case letters, digits, _ or -, the first a letter or digit';
export const MAX_PARTITIONS = 64;
/** Per list of a consumer's filter (workspaces, profiles, platforms). */
const MAX_FILTER_ITEMS = 100;

const nameRule = { message: `name must be ${CONSUMER_NAME_RULE}` };

/** `POST /admin/consumers`. */
export class CreateConsumerDto {
  @ApiProperty({ pattern: CONSUMER_NAME.source, description: `The consumer's name: ${CONSUMER_NAME_RULE}.`, example: 'crm-sync' })
  @IsString()
  @Matches(CONSUMER_NAME, nameRule)
  name!: string;

  @ApiPropertyOptional({
    enum: CHANGE_TYPES,
    isArray: true,
    description: 'Only changes of these types, as `GET /changes?types=`; default every type.',
  })
  @IsOptional()
  @IsArray()
  @ArrayMinSize(1)
  @ArrayUnique()
  @IsIn(CHANGE_TYPES, { each: true, message: `types must hold only ${CHANGE_TYPES.join(', ')}` })
  types?: ChangeType[];

  @ApiPropertyOptional({
    type: [String],
    description: 'Only these workspaces; default every workspace (then only a reader of every workspace may read the consumer).',
    example: ['default'],
  })
  @IsOptional()
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(MAX_FILTER_ITEMS)
  @ArrayUnique()
  @Matches(WORKSPACE_ID, { each: true, message: 'workspaces must hold workspace ids (lower-case letters, digits and -, 1 to 63)' })
  workspaces?: string[];

  @ApiPropertyOptional({
    type: [String],
    description: "Only changes of any of these profiles' posts and accounts.",
    example: ['66a9ffee00112233445566aa'],
  })
  @IsOptional()
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(MAX_FILTER_ITEMS)
  @IsString({ each: true })
  @MinLength(1, { each: true })
  @MaxLength(200, { each: true })
  profileIds?: string[];

  @ApiPropertyOptional({
    type: [String],
    description: 'Only changes of posts targeting, or accounts on, any of these platforms.',
    example: ['instagram'],
  })
  @IsOptional()
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(MAX_FILTER_ITEMS)
  @IsString({ each: true })
  @MinLength(1, { each: true })
  @MaxLength(50, { each: true })
  platforms?: string[];

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    maximum: MAX_PARTITIONS,
    default: 1,
    description: 'How many workers may read it at once: each reads one partition (`partition=0` to N−1), and every resource falls in one.',
  })
  @IsOptional()
  @IsInt({ message: `partitions must be an integer from 1 to ${MAX_PARTITIONS}` })
  @Min(1, { message: `partitions must be an integer from 1 to ${MAX_PARTITIONS}` })
  @Max(MAX_PARTITIONS, { message: `partitions must be an integer from 1 to ${MAX_PARTITIONS}` })
  partitions?: number;
}

/** `GET /admin/consumers`. */
export class ListConsumersQuery {
  @LimitParam(100, 'Consumers per page, by name.')
  limit?: number;

  @ApiPropertyOptional({ description: '`nextCursor` of the previous page, as given.' })
  @IsOptional()
  @IsString()
  cursor?: string;
}

export class ConsumerNameParams {
  @ApiProperty({ pattern: CONSUMER_NAME.source, example: 'crm-sync' })
  @Matches(CONSUMER_NAME, nameRule)
  name!: string;
}

/** `POST /changes/commit`. */
export class CommitConsumerDto {
  @ApiProperty({ pattern: CONSUMER_NAME.source, description: 'The consumer (POST /admin/consumers).', example: 'crm-sync' })
  @IsString()
  @Matches(CONSUMER_NAME, { message: `consumer must be ${CONSUMER_NAME_RULE}` })
  consumer!: string;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 0,
    maximum: MAX_PARTITIONS - 1,
    description: 'Required when the consumer has more than one partition.',
  })
  @IsOptional()
  @IsInt({ message: 'partition must be an integer from 0 to the partitions − 1' })
  @Min(0, { message: 'partition must be an integer from 0 to the partitions − 1' })
  @Max(MAX_PARTITIONS - 1, { message: 'partition must be an integer from 0 to the partitions − 1' })
  partition?: number;

  @ApiProperty({
    description: 'The `nextCursor` of the read whose entries are done: every entry up to it is committed.',
    example: '1042',
  })
  @IsString()
  @Matches(CURSOR_PATTERN, { message: 'cursor must be a cursor this service answered (decimal digits)' })
  cursor!: string;
}
