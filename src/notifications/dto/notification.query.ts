import { IsBoolean, IsIn, IsISO8601, IsInt, IsOptional, IsUUID, Matches, Max, Min } from 'class-validator';
import { BooleanParam, IntParam } from '../../mirror/query-params';

export const NOTIFICATION_STATES = ['pending', 'delivered', 'superseded', 'dead', 'cancelled'] as const;
export type NotificationState = (typeof NOTIFICATION_STATES)[number];

export const REPLAY_SOURCES = ['dead-letters', 'history'] as const;
export type ReplaySource = (typeof REPLAY_SOURCES)[number];

/** `GET /admin/notifications`: newest first. */
export class ListNotificationsQuery {
  @IsOptional()
  @IsUUID('4', { message: 'subscriptionId must be a subscription id (a UUID)' })
  subscriptionId?: string;

  @IsOptional()
  @IsIn(NOTIFICATION_STATES)
  state?: NotificationState;

  @IsOptional()
  @IntParam()
  @IsInt()
  @Min(1)
  @Max(500)
  limit?: number;
}

export class NotificationIdParams {
  @Matches(/^msg_[0-9a-f]{32}$/, { message: 'id must be a notification id (msg_ and 32 hex digits)' })
  id!: string;
}

/** `POST /admin/subscriptions/:id/replay`. */
export class BulkReplayQuery {
  /** Notifications created at or after this (ISO 8601). */
  @IsISO8601({ strict: true }, { message: 'since must be an ISO 8601 date-time' })
  since!: string;

  /** `dead-letters`: those in the delivery dead-letter queue; `history`: every one sent, the newest per resource. */
  @IsIn(REPLAY_SOURCES)
  source!: ReplaySource;

  /** Only count what would be replayed. */
  @IsOptional()
  @BooleanParam()
  @IsBoolean()
  dryRun?: boolean;
}
