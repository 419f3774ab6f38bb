import { ApiProperty } from '@nestjs/swagger';
import { SubscriptionHealthResponse } from '../../notifications/dto/subscription.response';

const DATE_TIME = { type: String, format: 'date-time' } as const;
const COUNT = { type: 'integer', example: 0 } as const;

export class QueueStatusResponse {
  @ApiProperty({ ...COUNT, description: 'Resources waiting for a read from Pozy.' })
  pendingReads!: number;

  @ApiProperty({ type: 'integer', nullable: true, description: 'Age of the oldest pending read; null when none.', example: null })
  oldestPendingAgeMs!: number | null;

  @ApiProperty(COUNT)
  jobs!: number;

  @ApiProperty({ ...COUNT, description: 'Jobs whose last attempt failed.' })
  failingJobs!: number;
}

export class EventsStatusResponse {
  @ApiProperty({ ...COUNT, description: 'Events stored, all time.' })
  received!: number;

  @ApiProperty(COUNT)
  lastHour!: number;

  @ApiProperty({ ...DATE_TIME, nullable: true })
  lastReceivedAt!: Date | null;
}

export class MirrorStatusResponse {
  @ApiProperty(COUNT)
  posts!: number;

  @ApiProperty(COUNT)
  deletedPosts!: number;

  @ApiProperty(COUNT)
  accounts!: number;

  @ApiProperty(COUNT)
  removedAccounts!: number;

  @ApiProperty({ ...DATE_TIME, nullable: true, description: 'The last read from Pozy of any row.' })
  lastSyncedAt!: Date | null;
}

export class DeadLetterCountsResponse {
  @ApiProperty({ ...COUNT, description: 'Reconciles and notifications given up on, not replayed.' })
  delivery!: number;

  @ApiProperty({ ...COUNT, description: "Events the database never acknowledged, in this replica's spool." })
  ack!: number;
}

export class SpoolStatusResponse {
  @ApiProperty({ ...COUNT, description: "Events this replica's spool holds, waiting for the database." })
  pending!: number;
}

export class BackfillLastRunResponse {
  @ApiProperty({ format: 'uuid' })
  id!: string;

  @ApiProperty({ enum: ['running', 'succeeded', 'failed'] })
  status!: string;

  @ApiProperty(DATE_TIME)
  startedAt!: Date;

  @ApiProperty({ ...DATE_TIME, nullable: true })
  finishedAt!: Date | null;

  @ApiProperty(COUNT)
  eventsRecovered!: number;

  @ApiProperty({ type: String, nullable: true })
  error!: string | null;
}

export class GapHourResponse {
  @ApiProperty({ ...DATE_TIME, description: 'The hour the events happened.' })
  hour!: Date;

  @ApiProperty({ ...COUNT, description: 'Events Pozy logged that never reached us (recovered by the backfill).', example: 2 })
  events!: number;
}

export class BackfillStatusResponse {
  @ApiProperty({ type: BackfillLastRunResponse, nullable: true })
  lastRun!: BackfillLastRunResponse | null;

  @ApiProperty({ type: [GapHourResponse], description: 'The gap report, per hour, last 48 h.' })
  gaps!: GapHourResponse[];
}

export class SubscriberStatusResponse {
  @ApiProperty({ format: 'uuid' })
  id!: string;

  @ApiProperty({ example: 'https://example.com', description: "The endpoint's origin only: its path and query may hold a token, and this is public." })
  origin!: string;

  @ApiProperty()
  active!: boolean;

  @ApiProperty({ type: SubscriptionHealthResponse })
  health!: SubscriptionHealthResponse;
}

export class NotificationsStatusResponse {
  @ApiProperty({ ...COUNT, description: 'Notifications waiting to be sent.' })
  pending!: number;

  @ApiProperty({ type: 'integer', nullable: true, example: null })
  oldestPendingAgeMs!: number | null;

  @ApiProperty({ type: [SubscriberStatusResponse] })
  subscribers!: SubscriberStatusResponse[];
}

/** How far behind the mirror is, from the database alone. */
export class SyncStatusResponse {
  @ApiProperty({ type: QueueStatusResponse })
  queue!: QueueStatusResponse;

  @ApiProperty({ type: EventsStatusResponse })
  events!: EventsStatusResponse;

  @ApiProperty({ type: MirrorStatusResponse })
  mirror!: MirrorStatusResponse;

  @ApiProperty({ type: DeadLetterCountsResponse, description: 'Dead letters not replayed yet, by queue.' })
  deadLetters!: DeadLetterCountsResponse;

  @ApiProperty({ type: SpoolStatusResponse })
  spool!: SpoolStatusResponse;

  @ApiProperty({ type: BackfillStatusResponse })
  backfill!: BackfillStatusResponse;

  @ApiProperty({ type: NotificationsStatusResponse })
  notifications!: NotificationsStatusResponse;
}
