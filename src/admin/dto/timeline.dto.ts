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

export class TimelineVersionResponse {
  @ApiProperty({ description: "`post:<id>`, or `account:<id>` for a profile's read.", example: 'post:66aa01f3c2b1e4d5f6a7b8c9' })
  resource!: string;

  @ApiProperty({
    description: "The version's `sequence`: its row in GET /posts/:id/history (or /accounts/:id/history), its feed entry's and its notifications'.",
    example: 3,
  })
  sequence!: number;

  @ApiProperty({
    type: Number,
    nullable: true,
    description: 'The version before it that the history holds; null when it holds none (the first, or one older than the history).',
    example: 2,
  })
  previousSequence!: number | null;

  @ApiProperty({
    type: [String],
    nullable: true,
    description:
      'The top-level fields of the resource (as GET /posts/:id answers it) that differ from the previous version, by name; ' +
      'the bookkeeping every write changes (`sequence`, `syncedAt`, `lastEventAt`) left out. Null without a previous version.',
    example: ['content', 'pozyUpdatedAt', 'updatedAt'],
  })
  changedFields!: string[] | null;
}

export class TimelineEntryResponse {
  @ApiProperty({ type: String, format: 'date-time', description: 'When it happened here: received, decided, written, created.' })
  at!: string;

  @ApiProperty({
    enum: [...ENTRY_KINDS],
    description:
      '`event`: a delivery received (`eventId`, `type`, `timestamp`, `attempt`, `deliveryId`, `copies`, `duplicates`, `recoveredBy`); ' +
      '`resync`: an operator asked for a read; `reconcile`: a job decided (`outcome`: written, stale, deleted, unknown, skipped, postponed, ' +
      'lagging, dead_lettered, failed; `lane`, `statusCode` and `sentAt` of the read, `detail`: why; `readId`, `changed` and `versions`: ' +
      'what its write changed); `feed`: an entry of GET /changes ' +
      '(`type`, `sequence`, `position`); `notification`: a change notification (`subscriptionId`, `state`, `attempts`, `attemptHistory`); ' +
      '`dead_letter`: a letter of the delivery queue (`deadLetterId`, `letterKind`: reconcile or notification, `reason`, `error`, `attempts`, ' +
      '`replayedAt`, `resolution`).',
    example: 'event',
  })
  kind!: string;

  @ApiProperty({ type: String, nullable: true, description: 'The trace it belongs to (events, reconciles, notifications), when traces are on.' })
  traceId!: string | null;

  @ApiPropertyOptional({
    type: String,
    format: 'uuid',
    nullable: true,
    description:
      '`reconcile` only: the read of Pozy whose answer was written (the `readId` of the versions that write made); null when no answer was written (nothing read, a lagging answer).',
  })
  readId?: string | null;

  @ApiPropertyOptional({
    type: Boolean,
    nullable: true,
    description:
      '`reconcile` only: whether its write changed the mirrored resource (made a version). False for a re-read of the version the ' +
      'mirror holds, an older version the guard refused (`stale`), and every outcome that wrote nothing; null when no longer known ' +
      '(a read older than HISTORY_RETENTION_DAYS, whose version retention may have pruned, or recorded before reads named their versions).',
  })
  changed?: boolean | null;

  @ApiPropertyOptional({
    type: [TimelineVersionResponse],
    description: "`reconcile` only: the versions its write made (one for a post; a profile's read, one per account it changed); empty when none.",
  })
  versions?: TimelineVersionResponse[];

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
