import { ApiProperty } from '@nestjs/swagger';
import { CHANGE_TYPES } from '../record-changes';
import { ChangePageResponse } from './change.response';

const STATUS = {
  enum: ['active', 'expired'],
  description: '`expired`: the position fell CONSUMER_MAX_LAG_DAYS behind; reads answer 410 until a commit.',
};

export class ConsumerLagResponse {
  @ApiProperty({
    type: 'integer',
    description:
      'Feed positions between the committed one and the head: an upper bound of the entries still to read (those of other filters and partitions count too).',
    example: 12,
  })
  entries!: number;

  @ApiProperty({ description: 'How old the oldest entry not committed is, in seconds; 0 when caught up.', example: 3.2 })
  seconds!: number;
}

export class ConsumerPartitionResponse {
  @ApiProperty({ type: 'integer', example: 0 })
  partition!: number;

  @ApiProperty({ description: 'The committed position: reads of this partition go on after it.', example: '1042' })
  cursor!: string;

  @ApiProperty({ type: ConsumerLagResponse })
  lag!: ConsumerLagResponse;

  @ApiProperty({ type: String, format: 'date-time', nullable: true, description: 'The last commit; null until the first.' })
  committedAt!: string | null;

  @ApiProperty({ type: String, format: 'date-time', nullable: true, description: 'The last read, recorded about once a second at most.' })
  lastReadAt!: string | null;

  @ApiProperty(STATUS)
  status!: string;

  @ApiProperty({ type: String, format: 'date-time', nullable: true })
  expiredAt!: string | null;
}

export class ConsumerResponse {
  @ApiProperty({ example: 'crm-sync' })
  name!: string;

  @ApiProperty({ enum: CHANGE_TYPES, isArray: true, nullable: true, description: 'null: every type.' })
  types!: string[] | null;

  @ApiProperty({
    oneOf: [
      { type: 'string', enum: ['*'] },
      { type: 'array', items: { type: 'string' } },
    ],
    description: '`"*"`: every workspace.',
    example: ['default'],
  })
  workspaces!: string[] | '*';

  @ApiProperty({ type: [String], nullable: true, description: 'null: every profile.' })
  profileIds!: string[] | null;

  @ApiProperty({ type: [String], nullable: true, description: 'null: every platform.' })
  platforms!: string[] | null;

  @ApiProperty({ type: 'integer', minimum: 1, maximum: 64, example: 1 })
  partitions!: number;

  @ApiProperty({ type: String, format: 'date-time' })
  createdAt!: string;

  @ApiProperty({ ...STATUS, description: '`expired` when any partition is.' })
  status!: string;

  @ApiProperty({ description: "The feed's head when this was answered.", example: '1054' })
  head!: string;

  @ApiProperty({ type: ConsumerLagResponse, description: 'The largest of the partitions` lags.' })
  lag!: ConsumerLagResponse;

  @ApiProperty({ type: [ConsumerPartitionResponse], description: 'By partition, 0 first.' })
  positions!: ConsumerPartitionResponse[];
}

export class ConsumerPageResponse {
  @ApiProperty({ type: [ConsumerResponse] })
  data!: ConsumerResponse[];

  @ApiProperty({ type: String, nullable: true, description: 'The next page`s `cursor`; null on the last page.' })
  nextCursor!: string | null;
}

export class ConsumerChangePageResponse extends ChangePageResponse {
  @ApiProperty({ description: 'The consumer read (`consumer`).', example: 'crm-sync' })
  consumer!: string;

  @ApiProperty({ type: 'integer', description: 'The partition read; commit `nextCursor` for it once `data` is applied.', example: 0 })
  partition!: number;

  @ApiProperty({ type: 'integer', minimum: 1, description: "The consumer's partitions.", example: 1 })
  partitions!: number;

  @ApiProperty({
    type: String,
    format: 'date-time',
    nullable: true,
    description: 'When this partition was last committed; null before its first commit: read the mirror whole first, then commit the head.',
  })
  committedAt!: string | null;
}

export class CommitAnswerResponse extends ConsumerPartitionResponse {
  @ApiProperty({ example: 'crm-sync' })
  consumer!: string;
}
