import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import { LimitParam } from '../../common/query-params';
import { DEFAULT_WORKSPACE, WORKSPACE_ID } from '../../common/workspace-id';
import { ENTRY_KINDS } from '../timeline.repository';

export class TimelineQuery {
  @ApiPropertyOptional({ description: 'The workspace the resource is in.', default: DEFAULT_WORKSPACE, example: DEFAULT_WORKSPACE })
  @IsOptional()
  @Matches(WORKSPACE_ID, { message: 'workspace must be a workspace id (lower-case letters, digits and -, 1 to 63)' })
  workspace?: string;

  @LimitParam(100, 'Entries of the page, oldest first.')
  limit?: number;

  @ApiPropertyOptional({ description: 'The `nextCursor` of the previous page, as given.' })
  @IsOptional()
  @IsString()
  @MaxLength(512)
  cursor?: string;
}

export class TimelineEntryResponse {
  @ApiProperty({ type: String, format: 'date-time', description: 'When it happened here: received, decided, written, created.' })
  at!: string;

  @ApiProperty({
    enum: [...ENTRY_KINDS],
    description:
      '`event`: a delivery received (`eventId`, `type`, `timestamp`, `attempt`, `deliveryId`, `copies`, `duplicates`, `recoveredBy`); ' +
      '`resync`: an operator asked for a read; `reconcile`: a job decided (`outcome`: written, stale, deleted, unknown, skipped, postponed, ' +
      'lagging, dead_lettered, failed; `lane`, `statusCode` and `sentAt` of the read, `detail`: why); `feed`: an entry of GET /changes ' +
      '(`type`, `sequence`, `position`); `notification`: a change notification (`subscriptionId`, `state`, `attempts`, `attemptHistory`); ' +
      '`dead_letter`: a letter of the delivery queue (`reason`, `error`, `replayedAt`).',
    example: 'event',
  })
  kind!: string;

  @ApiProperty({ type: String, nullable: true, description: 'The trace it belongs to (events, reconciles, notifications), when traces are on.' })
  traceId!: string | null;

  [field: string]: unknown;
}

export class TimelineResponse {
  @ApiProperty({ example: DEFAULT_WORKSPACE })
  workspaceId!: string;

  @ApiProperty({ description: '`post:<id>` or `profile:<id>`.', example: 'post:66aa01f3c2b1e4d5f6a7b8c9' })
  resource!: string;

  @ApiProperty({ type: [TimelineEntryResponse] })
  entries!: TimelineEntryResponse[];

  @ApiProperty({ type: String, nullable: true, description: 'Pass as `cursor` for the next page; null on the last.', example: null })
  nextCursor!: string | null;
}
