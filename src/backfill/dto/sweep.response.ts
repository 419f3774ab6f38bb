import { ApiProperty } from '@nestjs/swagger';

export class SweepCountsResponse {
  @ApiProperty({ type: 'integer', description: 'In Pozy, not in the mirror.', example: 2 })
  created!: number;

  @ApiProperty({ type: 'integer', description: 'Different in Pozy.', example: 1 })
  changed!: number;

  @ApiProperty({ type: 'integer', description: 'Posts Pozy answers 404 for; accounts no longer listed.', example: 0 })
  deleted!: number;

  @ApiProperty({ type: 'integer', example: 120 })
  unchanged!: number;
}

/** What the sweep found (and, unless a dry run, corrected). */
export class SweepReportResponse {
  @ApiProperty({ description: 'True: only counted, nothing changed.' })
  dryRun!: boolean;

  @ApiProperty({ type: SweepCountsResponse })
  posts!: SweepCountsResponse;

  @ApiProperty({ type: SweepCountsResponse })
  accounts!: SweepCountsResponse;

  @ApiProperty({ type: 'integer', example: 5300 })
  durationMs!: number;
}
