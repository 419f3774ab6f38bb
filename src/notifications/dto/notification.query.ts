import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsBoolean, IsIn, IsOptional, IsUUID, Matches } from 'class-validator';
import { IsInstant } from '../../common/instant';
import { BooleanParam, LimitParam } from '../../common/query-params';

export const NOTIFICATION_STATES = ['pending', 'delivered', 'superseded', 'dead', 'cancelled'] as const;
export type NotificationState = (typeof NOTIFICATION_STATES)[number];

export const REPLAY_SOURCES = ['dead-letters', 'history'] as const;
export type ReplaySource = (typeof REPLAY_SOURCES)[number];

/** `GET /admin/notifications`: newest first. */
export class ListNotificationsQuery {
  @ApiPropertyOptional({ format: 'uuid', description: "Only this subscription's notifications.", example: '2f6a1c9e-5b7d-4e3f-9a8b-1c2d3e4f5a6b' })
  @IsOptional()
  @IsUUID('4', { message: 'subscriptionId must be a subscription id (a UUID)' })
  subscriptionId?: string;

  @ApiPropertyOptional({ enum: [...NOTIFICATION_STATES], description: 'Only notifications in this state.', example: 'dead' })
  @IsOptional()
  @IsIn(NOTIFICATION_STATES)
  state?: NotificationState;

  @LimitParam(100, 'How many, newest first.')
  limit?: number;
}

export class NotificationIdParams {
  @ApiProperty({
    description: 'A notification id (its `webhook-id`).',
    pattern: '^msg_[0-9a-f]{32}$',
    example: 'msg_3f0c2d1e4b5a69788796a5b4c3d2e1f0',
  })
  @Matches(/^msg_[0-9a-f]{32}$/, { message: 'id must be a notification id (msg_ and 32 hex digits)' })
  id!: string;
}

/** `POST /admin/subscriptions/:id/replay`. */
export class BulkReplayQuery {
  /** Notifications created at or after this (ISO 8601). */
  @ApiProperty({ format: 'date-time', description: 'Notifications created at or after this (ISO 8601).', example: '2026-11-29T00:00:00Z' })
  @IsInstant()
  since!: string;

  /** `dead-letters`: those in the delivery dead-letter queue; `history`: every one sent, the newest per resource. */
  @ApiProperty({
    enum: [...REPLAY_SOURCES],
    description: '`dead-letters`: those in the dead-letter queue; `history`: every one sent (delivered or dead), the newest per resource.',
    example: 'dead-letters',
  })
  @IsIn(REPLAY_SOURCES)
  source!: ReplaySource;

  /** Only count what would be replayed. */
  @ApiPropertyOptional({ type: Boolean, default: false, description: 'Only count what would be replayed.', example: true })
  @IsOptional()
  @BooleanParam()
  @IsBoolean()
  dryRun?: boolean;
}
