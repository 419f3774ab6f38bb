import { ApiProperty } from '@nestjs/swagger';
import { RUN_KINDS, RUN_PHASES, RunKind, RunPhase, SweepCounts, SweepRun } from '../sweep-run.repository';
import { postProgress } from '../import-and-sweep-runner';

const DATE_TIME = { type: String, format: 'date-time' } as const;

/** `202` of `POST /admin/sweep`. */
export class SweepStartedResponse {
  @ApiProperty({ format: 'uuid', description: 'The run, for `GET /admin/sweep/{runId}`.', example: '0b5f5c9e-2f4e-4d8a-9a51-8c1f7e3b6a20' })
  runId!: string;
}

export class SweepCountsResponse implements SweepCounts {
  @ApiProperty({ type: 'integer', description: 'In Pozy, not in the mirror.', example: 2 })
  created!: number;

  @ApiProperty({ type: 'integer', description: 'Different in Pozy.', example: 1 })
  changed!: number;

  @ApiProperty({ type: 'integer', description: 'Posts Pozy answers 404 for; accounts their profile no longer lists.', example: 0 })
  deleted!: number;

  @ApiProperty({ type: 'integer', example: 120 })
  unchanged!: number;
}

export class DoneOfTotal {
  @ApiProperty({ type: 'integer', example: 25_000 })
  done!: number;

  @ApiProperty({
    type: 'integer',
    nullable: true,
    description: "As Pozy counted it at the last page read (for a run's posts, the most it counted during the run); null before the first.",
    example: 100_000,
  })
  total!: number | null;
}

export class SweepProgressResponse {
  @ApiProperty({
    type: DoneOfTotal,
    description:
      'Posts listed from Pozy and compared with the mirror, each counted once whichever pass listed it first, of the most ' +
      'posts Pozy counted during the run: neither ever goes back, a later pass included (see `currentPass`).',
  })
  posts!: DoneOfTotal;

  @ApiProperty({
    type: DoneOfTotal,
    description:
      "The current listing pass's own way through Pozy's list of posts: how far it has come (the offset of its next page), " +
      "of Pozy's count. In the first pass it goes with `posts`; a later pass (`pass` > 1) lists every post again from " +
      'the start, to find those deleted or missed while the first listed, and only these figures start again from 0.',
  })
  currentPass!: DoneOfTotal;

  @ApiProperty({ type: DoneOfTotal })
  accounts!: DoneOfTotal;

  @ApiProperty({ type: 'integer', description: "List pages read from Pozy (a page of posts, or Pozy's whole account list)." })
  pagesRead!: number;

  @ApiProperty({
    type: Number,
    nullable: true,
    description:
      'Posts (as `posts.done` counts them) a second since the run (re)started, not since its pass did; null when the run ' +
      'is not running or has counted none since.',
    example: 480,
  })
  postsPerSecond!: number | null;

  @ApiProperty({
    type: 'integer',
    nullable: true,
    description: "Seconds the rest of the first pass's listing should take at that rate; null otherwise.",
    example: 156,
  })
  etaSeconds!: number | null;
}

/** A run of the import or of the full sweep: its progress while it runs, then how it ended. */
export class SweepRunResponse {
  @ApiProperty({ format: 'uuid' })
  id!: string;

  @ApiProperty({ enum: RUN_KINDS, description: '`import`: the first listing of the workspace, on the first start; `sweep`: a full sweep.' })
  kind!: RunKind;

  @ApiProperty({
    enum: ['auto', 'admin', 'schedule'],
    description: 'Started on the first start (INITIAL_IMPORT=auto), by `POST /admin/sweep`, or by SWEEP_CRON.',
  })
  trigger!: string;

  @ApiProperty({ description: 'Only counted; changed nothing.' })
  dryRun!: boolean;

  @ApiProperty({
    enum: ['running', 'succeeded', 'failed'],
    description: 'A run stopped with its replica stays `running` and is resumed from its checkpoint.',
  })
  status!: string;

  @ApiProperty({ enum: RUN_PHASES, description: 'Listing accounts, then posts, then checking the mirror for what Pozy no longer lists.' })
  phase!: RunPhase;

  @ApiProperty({
    type: 'integer',
    minimum: 1,
    maximum: 3,
    description:
      "Which listing of the posts: another is made when Pozy's count at the end differs from what the listing saw (posts " +
      'deleted, without an event, after it saw them, or posts it missed). Its own progress is `progress.currentPass`.',
  })
  pass!: number;

  @ApiProperty(DATE_TIME)
  startedAt!: Date;

  @ApiProperty({ ...DATE_TIME, nullable: true })
  finishedAt!: Date | null;

  @ApiProperty({ type: SweepProgressResponse })
  progress!: SweepProgressResponse;

  @ApiProperty({ type: SweepCountsResponse })
  posts!: SweepCountsResponse;

  @ApiProperty({ type: SweepCountsResponse })
  accounts!: SweepCountsResponse;

  @ApiProperty({
    type: String,
    nullable: true,
    description: 'What the run is waiting out (Pozy unavailable or rate limiting); it goes on by itself.',
  })
  lastError!: string | null;

  @ApiProperty({ type: String, nullable: true, description: 'Why the run failed.' })
  error!: string | null;
}

/** A run as the API shows it. */
export function runView(run: SweepRun): SweepRunResponse {
  const posts = postProgress(run, run.readAt);
  return {
    id: run.id,
    kind: run.kind,
    trigger: run.trigger,
    dryRun: run.dryRun,
    status: run.status,
    phase: run.phase,
    pass: run.pass,
    startedAt: run.startedAt,
    finishedAt: run.finishedAt,
    progress: {
      posts: { done: posts.done, total: posts.total },
      currentPass: posts.pass,
      accounts: { done: run.accountsDone, total: run.accountsTotal },
      pagesRead: run.pagesRead,
      postsPerSecond: posts.perSecond === null ? null : Math.round(posts.perSecond * 10) / 10,
      etaSeconds: posts.etaSeconds,
    },
    posts: run.posts,
    accounts: run.accounts,
    lastError: run.lastError,
    error: run.error,
  };
}
