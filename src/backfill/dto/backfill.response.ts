import { ApiProperty } from '@nestjs/swagger';

const DATE_TIME = { type: String, format: 'date-time' } as const;

/** `202` of `POST /admin/backfill`. */
export class BackfillStartedResponse {
  @ApiProperty({ format: 'uuid', description: 'The run, for `GET /admin/backfill/{runId}`.', example: '5d1c8e0e-7d0b-4a4e-8f59-6f7a9d9e2b31' })
  runId!: string;
}

/** A backfill run: its progress while it runs, then how it ended. */
export class BackfillRunResponse {
  @ApiProperty({ format: 'uuid' })
  id!: string;

  @ApiProperty({ enum: ['schedule', 'admin'], description: 'Started by BACKFILL_CRON or by `POST /admin/backfill`.' })
  trigger!: 'schedule' | 'admin';

  @ApiProperty({ enum: ['running', 'succeeded', 'failed'] })
  status!: 'running' | 'succeeded' | 'failed';

  @ApiProperty(DATE_TIME)
  startedAt!: Date;

  @ApiProperty({ ...DATE_TIME, nullable: true })
  finishedAt!: Date | null;

  @ApiProperty({ ...DATE_TIME, nullable: true, description: "Where the scan of Pozy's delivery logs began (null: as far back as they go)." })
  scanFrom!: Date | null;

  @ApiProperty({ ...DATE_TIME, nullable: true, description: 'The newest log row seen: where the next run starts.' })
  newestLogAt!: Date | null;

  @ApiProperty({ type: 'integer', description: 'Log rows read so far.', example: 1200 })
  rowsScanned!: number;

  @ApiProperty({ type: 'integer', description: 'Events found in the logs that had never reached us, stored now.', example: 3 })
  eventsRecovered!: number;

  @ApiProperty({
    type: 'integer',
    description:
      'Logged events refused as events (malformed, data PostgreSQL refuses, or older than EVENT_RETENTION_DAYS less a day), never stored: no run could store them. ' +
      'Any other failure to store one fails the run.',
    example: 0,
  })
  eventsSkipped!: number;

  @ApiProperty({ type: [String], description: 'Event types the scan was narrowed to.', example: ['post.published'] })
  narrowedTypes!: string[];

  @ApiProperty({ type: String, nullable: true, description: 'Why the run failed.' })
  error!: string | null;
}
