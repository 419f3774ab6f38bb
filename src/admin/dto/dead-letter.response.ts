import { ApiExtraModels, ApiProperty, ApiPropertyOptional, getSchemaPath } from '@nestjs/swagger';
import { QUEUES } from './dead-letter.query';

const DATE_TIME = { type: String, format: 'date-time' } as const;

/** A letter of the `delivery` queue: a reconcile or a change notification given up on. */
export class DeadLetterResponse {
  @ApiProperty({ format: 'uuid', example: '0b7f8a52-4a0c-4c1e-9a59-3f1f2b7a6c11' })
  id!: string;

  @ApiProperty({ enum: ['delivery'], example: 'delivery' })
  queue!: 'delivery';

  @ApiProperty({ description: 'The workspace of the resource.', example: 'default' })
  workspaceId!: string;

  @ApiProperty({ enum: ['reconcile', 'notification'], description: 'A read from Pozy, or a change notification to a subscriber.' })
  kind!: 'reconcile' | 'notification';

  @ApiProperty({ description: 'The resource: `post:<id>`, `profile:<id>`, `account:<id>`.', example: 'post:66aa01f3c2b1e4d5f6a7b8c9' })
  resourceKey!: string;

  @ApiProperty({
    type: 'object',
    additionalProperties: true,
    description: 'What a replay needs: `{ resource, id }` for a reconcile, `{ notificationId }` for a notification.',
    example: { resource: 'post', id: '66aa01f3c2b1e4d5f6a7b8c9' },
  })
  payload!: unknown;

  @ApiProperty({ description: 'Why it was given up on.', example: 'attempts_exhausted' })
  reason!: string;

  @ApiProperty({ description: 'The last error.', example: 'Pozy answered 500' })
  error!: string;

  @ApiProperty({ type: 'integer', example: 8 })
  attempts!: number;

  @ApiProperty(DATE_TIME)
  firstFailureAt!: Date;

  @ApiProperty(DATE_TIME)
  lastFailureAt!: Date;

  @ApiProperty(DATE_TIME)
  createdAt!: Date;

  @ApiProperty({ ...DATE_TIME, nullable: true, description: 'The last replay; null while never replayed.' })
  replayedAt!: Date | null;

  @ApiProperty({ type: 'integer', example: 0 })
  replayCount!: number;

  @ApiProperty({ ...DATE_TIME, nullable: true, description: 'Set when no replay is needed any more; null otherwise.' })
  resolvedAt!: Date | null;

  @ApiProperty({
    type: String,
    nullable: true,
    example: 'superseded: the subscriber received a newer version',
    description: 'Why no replay is needed any more.',
  })
  resolution!: string | null;
}

/** A letter of the `ack` queue: an event the database never acknowledged, held in this replica's spool. */
export class SpooledEventResponse {
  @ApiProperty({ format: 'uuid', description: 'The letter id (for `POST /admin/dead-letters/{id}/replay`).' })
  id!: string;

  @ApiProperty({ description: 'The workspace whose path received the event.', example: 'default' })
  workspaceId!: string;

  @ApiProperty({ description: "The event's id (Pozy's).", example: 'evt_01J8Z6W2C5' })
  eventId!: string;

  @ApiProperty({ example: 'post.published' })
  eventType!: string;

  @ApiProperty(DATE_TIME)
  spooledAt!: Date;

  @ApiProperty({ type: 'integer', example: 5 })
  attempts!: number;

  @ApiProperty({ ...DATE_TIME, nullable: true })
  nextAttemptAt!: Date | null;

  @ApiProperty({ ...DATE_TIME, nullable: true })
  firstTimeoutAt!: Date | null;

  @ApiProperty({ example: 'the database did not acknowledge within 2000 ms' })
  lastError!: string;

  @ApiProperty({ enum: ['pending', 'dead'] })
  state!: 'pending' | 'dead';

  @ApiProperty({ ...DATE_TIME, nullable: true })
  deadAt!: Date | null;
}

@ApiExtraModels(DeadLetterResponse, SpooledEventResponse)
export class DeadLetterListResponse {
  @ApiProperty({
    type: 'array',
    description: 'Newest first: `DeadLetterResponse` items for `queue=delivery`, `SpooledEventResponse` items for `queue=ack`.',
    items: { oneOf: [{ $ref: getSchemaPath(DeadLetterResponse) }, { $ref: getSchemaPath(SpooledEventResponse) }] },
  })
  data!: Array<DeadLetterResponse | SpooledEventResponse>;
}

export class DeadLetterReplayAllResponse {
  @ApiPropertyOptional({
    format: 'uuid',
    description: 'The run replaying them, for `GET /admin/dead-letters/replay/{runId}`; absent for a dry run.',
    example: '5d1c8e0e-7d0b-4a4e-8f59-6f7a9d9e2b31',
  })
  runId?: string;

  @ApiProperty({ enum: [...QUEUES] })
  queue!: string;

  @ApiProperty({ type: 'integer', description: 'Letters not replayed yet: what the run takes, or would take (dry run).', example: 3 })
  count!: number;

  @ApiPropertyOptional({ type: Boolean, enum: [false], description: 'A dry run only: `false`, nothing was replayed.' })
  replayed?: false;
}

/** A bulk replay: its progress while it runs, then how it ended. */
export class DeadLetterReplayRunResponse {
  @ApiProperty({ format: 'uuid' })
  id!: string;

  @ApiProperty({ enum: [...QUEUES] })
  queue!: string;

  @ApiProperty({
    enum: ['running', 'succeeded', 'failed', 'interrupted'],
    description:
      '`interrupted`: its replica stopped (or died: no heartbeat for 30 s) before the end; the letters it had not replayed are still waiting for the next run.',
  })
  status!: string;

  @ApiProperty({ description: "The replica running it (its host name): an `ack` run replays that replica's spool.", example: 'pozy-sync-api-0' })
  host!: string;

  @ApiProperty({ type: String, format: 'uuid', nullable: true, description: '`ack`: the spool it replays.' })
  spoolId!: string | null;

  @ApiProperty(DATE_TIME)
  startedAt!: Date;

  @ApiProperty({ ...DATE_TIME, description: 'Last sign of life of the run.' })
  heartbeatAt!: Date;

  @ApiProperty({ ...DATE_TIME, nullable: true })
  finishedAt!: Date | null;

  @ApiProperty({ type: 'integer', description: 'Letters not replayed yet when it started: what it goes through.', example: 3000 })
  total!: number;

  @ApiProperty({ type: 'integer', description: 'Letters replayed so far.', example: 1200 })
  replayed!: number;

  @ApiProperty({
    type: 'integer',
    description:
      'Letters left as they are: a notification whose resource has a newer version since, a post neither Pozy nor the mirror knows, an event PostgreSQL refuses.',
    example: 0,
  })
  skipped!: number;

  @ApiProperty({ type: 'integer', description: 'Batches done (at most 200 letters each; an `ack` batch at most 4 MiB of events).', example: 6 })
  batches!: number;

  @ApiProperty({ type: String, nullable: true, description: 'Why it failed, or was interrupted.' })
  error!: string | null;
}

export class DeadLetterReplayResponse {
  @ApiProperty({ type: Boolean, enum: [true], example: true })
  replayed!: true;

  @ApiPropertyOptional({ description: 'A reconcile letter: the job key of the read queued now.', example: 'post:66aa01f3c2b1e4d5f6a7b8c9' })
  reconcile?: string;

  @ApiPropertyOptional({ description: 'A notification letter: the notification sent again.', example: 'msg_3f0c2d1e4b5a69788796a5b4c3d2e1f0' })
  notification?: string;

  @ApiPropertyOptional({ type: 'integer', description: 'An ack letter: events inserted now (0 when it was already stored).', example: 1 })
  stored?: number;
}
