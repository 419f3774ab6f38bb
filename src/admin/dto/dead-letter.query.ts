import { IsBoolean, IsIn, IsInt, IsOptional, IsUUID, Max, Min } from 'class-validator';
import { BooleanParam, IntParam } from '../../mirror/query-params';

export const QUEUES = ['delivery', 'ack'] as const;

export class DeadLetterListQuery {
  @IsIn(QUEUES)
  queue!: (typeof QUEUES)[number];

  @IsOptional()
  @IntParam()
  @IsInt()
  @Min(1)
  @Max(500)
  limit?: number;
}

export class DeadLetterReplayAllQuery {
  @IsIn(QUEUES)
  queue!: (typeof QUEUES)[number];

  /** Say how many would be replayed, and replay nothing. */
  @IsOptional()
  @BooleanParam()
  @IsBoolean()
  dryRun?: boolean;
}

export class DeadLetterIdParams {
  @IsUUID('4', { message: 'id must be a dead letter id (a UUID)' })
  id!: string;
}
