import { ApiProperty } from '@nestjs/swagger';
import { NOTIFICATION_TYPES } from '../notification-types';
import { REPLAY_SOURCES } from './notification.query';

const DATE_TIME = { type: String, format: 'date-time' } as const;

/** How a subscriber is doing. */
export class SubscriptionHealthResponse {
  @ApiProperty({
    enum: ['inactive', 'paused', 'failing', 'healthy'],
    description: '`inactive`: switched off; `paused`: the circuit breaker opened; `failing`: every attempt fails, lately; `healthy`.',
    example: 'healthy',
  })
  state!: 'inactive' | 'paused' | 'failing' | 'healthy';

  @ApiProperty({ type: 'integer', description: 'Notifications waiting to be sent.', example: 0 })
  pending!: number;

  @ApiProperty({ type: 'integer', description: 'Notifications given up on (in the dead-letter queue).', example: 0 })
  deadLetters!: number;

  @ApiProperty({ ...DATE_TIME, nullable: true })
  failingSince!: Date | null;

  @ApiProperty({ ...DATE_TIME, nullable: true })
  pausedAt!: Date | null;

  @ApiProperty({ type: String, nullable: true, description: 'Why the circuit breaker opened.' })
  pausedReason!: string | null;

  @ApiProperty({ ...DATE_TIME, nullable: true })
  lastSuccessAt!: Date | null;

  @ApiProperty({ ...DATE_TIME, nullable: true })
  lastFailureAt!: Date | null;

  @ApiProperty({ type: String, nullable: true, example: null })
  lastError!: string | null;
}

/** A change-notification subscription (never its secret, except once, when created or rotated). */
export class SubscriptionResponse {
  @ApiProperty({ format: 'uuid', example: '2f6a1c9e-5b7d-4e3f-9a8b-1c2d3e4f5a6b' })
  id!: string;

  @ApiProperty({ description: 'Where notifications are POSTed.', example: 'https://example.com/hooks/pozy-sync' })
  url!: string;

  @ApiProperty({ type: String, nullable: true, example: 'CRM sync' })
  description!: string | null;

  @ApiProperty({ enum: [...NOTIFICATION_TYPES], isArray: true, example: ['post.changed', 'post.deleted'] })
  eventTypes!: string[];

  @ApiProperty({ type: [String], description: 'Only these workspaces; empty: all.', example: [] })
  workspaceIds!: string[];

  @ApiProperty({ type: [String], description: 'Only these profiles; empty: all.', example: [] })
  profileIds!: string[];

  @ApiProperty({ type: [String], description: 'Only these platforms; empty: all.', example: ['instagram'] })
  platforms!: string[];

  @ApiProperty({ example: true })
  active!: boolean;

  @ApiProperty(DATE_TIME)
  createdAt!: Date;

  @ApiProperty({
    ...DATE_TIME,
    nullable: true,
    description:
      'After a rotation (`POST …/rotate-secret`), until when notifications are also signed with the secret it replaced; null: only with the current one.',
  })
  previousSecretUntil!: Date | null;

  @ApiProperty({ type: SubscriptionHealthResponse })
  health!: SubscriptionHealthResponse;
}

/** `201` of `POST /admin/subscriptions` and `200` of its rotate-secret: the only answers that carry the secret. */
export class CreatedSubscriptionResponse extends SubscriptionResponse {
  @ApiProperty({
    description: 'The signing secret (Standard Webhooks). Shown this once: keep it.',
    example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  })
  secret!: string;
}

export class SubscriptionListResponse {
  @ApiProperty({ type: [SubscriptionResponse] })
  data!: SubscriptionResponse[];
}

export class DeletedSubscriptionResponse {
  @ApiProperty({ format: 'uuid' })
  id!: string;

  @ApiProperty({ type: Boolean, enum: [true], example: true })
  deleted!: true;

  @ApiProperty({ type: 'integer', description: 'Pending notifications cancelled.', example: 0 })
  cancelled!: number;
}

/** `202` of `POST /admin/subscriptions/{id}/replay`. */
export class BulkReplayResponse {
  @ApiProperty({ format: 'uuid' })
  subscriptionId!: string;

  @ApiProperty({ enum: [...REPLAY_SOURCES] })
  source!: string;

  @ApiProperty({ format: 'date-time', example: '2026-11-29T00:00:00Z' })
  since!: string;

  @ApiProperty({ type: 'integer', description: 'Notifications replayed (or that would be, in a dry run).', example: 4 })
  count!: number;

  @ApiProperty()
  dryRun!: boolean;
}
