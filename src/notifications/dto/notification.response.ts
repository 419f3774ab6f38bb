import { ApiProperty } from '@nestjs/swagger';
import { NOTIFICATION_TYPES } from '../notification-types';
import { NOTIFICATION_STATES } from './notification.query';

const DATE_TIME = { type: String, format: 'date-time' } as const;

/** One change notification to one subscriber. */
export class NotificationSummaryResponse {
  @ApiProperty({ description: 'Also its `webhook-id`.', example: 'msg_3f0c2d1e4b5a69788796a5b4c3d2e1f0' })
  id!: string;

  @ApiProperty({ format: 'uuid' })
  subscriptionId!: string;

  @ApiProperty({ enum: [...NOTIFICATION_TYPES], example: 'post.changed' })
  type!: string;

  @ApiProperty({ example: 'post:66aa01f3c2b1e4d5f6a7b8c9' })
  resourceKey!: string;

  @ApiProperty({ type: 'integer', description: "The resource's version: higher is newer.", example: 7 })
  sequence!: number;

  @ApiProperty({ ...DATE_TIME, nullable: true })
  pozyUpdatedAt!: Date | null;

  @ApiProperty({ enum: [...NOTIFICATION_STATES], example: 'delivered' })
  state!: string;

  @ApiProperty({ type: 'integer', example: 1 })
  attempts!: number;

  @ApiProperty(DATE_TIME)
  createdAt!: Date;

  @ApiProperty({ ...DATE_TIME, nullable: true })
  nextAttemptAt!: Date | null;

  @ApiProperty({ ...DATE_TIME, nullable: true })
  deliveredAt!: Date | null;

  @ApiProperty({ type: String, nullable: true })
  lastError!: string | null;

  @ApiProperty({ type: 'integer', example: 0 })
  replayCount!: number;
}

export class NotificationAttemptResponse {
  @ApiProperty(DATE_TIME)
  attemptedAt!: Date;

  @ApiProperty({ type: 'integer', example: 42 })
  durationMs!: number;

  @ApiProperty({ type: 'integer', nullable: true, description: "The subscriber's HTTP status; null: no answer.", example: 200 })
  statusCode!: number | null;

  @ApiProperty({ enum: ['delivered', 'retry', 'dead'] })
  outcome!: 'delivered' | 'retry' | 'dead';

  @ApiProperty({ type: String, nullable: true })
  error!: string | null;

  @ApiProperty({ description: 'Sent by a replay.' })
  replay!: boolean;
}

/** A notification with its body's data and every attempt. */
export class NotificationDetailResponse extends NotificationSummaryResponse {
  @ApiProperty({ type: 'object', additionalProperties: true, description: "The `data` of the notification's body: the resource as mirrored." })
  data!: unknown;

  @ApiProperty({ type: [NotificationAttemptResponse] })
  attemptHistory!: NotificationAttemptResponse[];
}

export class NotificationListResponse {
  @ApiProperty({ type: [NotificationSummaryResponse], description: 'Newest first.' })
  data!: NotificationSummaryResponse[];
}

export class NotificationReplayResponse {
  @ApiProperty({ type: Boolean, enum: [true], example: true })
  replayed!: true;

  @ApiProperty({ example: 'msg_3f0c2d1e4b5a69788796a5b4c3d2e1f0' })
  id!: string;
}
