import { ApiProperty } from '@nestjs/swagger';

export class PruneCountsResponse {
  @ApiProperty({ type: 'integer', description: 'Stored webhook events.', example: 1200 })
  events!: number;

  @ApiProperty({ type: 'integer', description: 'Attempts of notifications that are kept.', example: 40 })
  notificationAttempts!: number;

  @ApiProperty({ type: 'integer', description: 'Notifications (their remaining attempts go with them, not counted above).', example: 30 })
  notifications!: number;

  @ApiProperty({ type: 'integer', example: 2 })
  backfillRuns!: number;

  @ApiProperty({ type: 'integer', description: 'Finished bulk replays of the dead-letter queues.', example: 1 })
  replayRuns!: number;

  @ApiProperty({ type: 'integer', example: 0 })
  deadLetters!: number;

  @ApiProperty({ type: 'integer', description: 'Permanently failed graphile-worker jobs.', example: 0 })
  failedJobs!: number;

  @ApiProperty({ type: 'integer', description: "Reconciles recorded on resources' timelines.", example: 900 })
  reads!: number;

  @ApiProperty({ type: 'integer', description: 'Operational events told of (ops.*).', example: 3 })
  opsEvents!: number;

  @ApiProperty({ type: 'integer', description: 'Change-feed entries (GET /changes), before `changeCutoff`.', example: 5000 })
  changes!: number;

  @ApiProperty({
    type: 'integer',
    description: "Posts' and accounts' superseded versions (GET /posts/:id/history), before `historyCutoff`; each one's newest is kept.",
    example: 700,
  })
  versions!: number;
}

/** `200` of `POST /admin/retention`: the rows deleted, per table. */
export class PruneResponse {
  @ApiProperty({ type: String, format: 'date-time', description: 'Rows older than this were pruned.' })
  cutoff!: Date;

  @ApiProperty({ type: String, format: 'date-time', description: 'Change-feed entries older than this were pruned (CHANGE_RETENTION_DAYS).' })
  changeCutoff!: Date;

  @ApiProperty({
    type: String,
    format: 'date-time',
    description:
      "Versions superseded (by a newer one read) before this were pruned (HISTORY_RETENTION_DAYS), each post's and account's newest aside.",
  })
  historyCutoff!: Date;

  @ApiProperty({ type: PruneCountsResponse })
  deleted!: PruneCountsResponse;

  @ApiProperty({ type: 'integer', example: 850 })
  durationMs!: number;
}
