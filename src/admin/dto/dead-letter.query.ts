import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsBoolean, IsIn, IsOptional, IsUUID } from 'class-validator';
import { BooleanParam, LimitParam } from '../../common/query-params';

export const QUEUES = ['delivery', 'ack'] as const;

export class DeadLetterListQuery {
  @ApiProperty({
    enum: [...QUEUES],
    description: "`delivery`: reconciles and notifications given up on. `ack`: events the database never acknowledged, in this replica's spool.",
    example: 'delivery',
  })
  @IsIn(QUEUES)
  queue!: (typeof QUEUES)[number];

  @LimitParam(100, 'How many letters, newest first.')
  limit?: number;
}

export class DeadLetterReplayAllQuery {
  @ApiProperty({
    enum: [...QUEUES],
    description: "The queue whose letters not replayed yet are replayed. `ack`: this replica's spool.",
    example: 'delivery',
  })
  @IsIn(QUEUES)
  queue!: (typeof QUEUES)[number];

  /** Say how many would be replayed, and replay nothing. */
  @ApiPropertyOptional({ type: Boolean, default: false, description: 'Only say how many would be replayed; replay nothing.', example: true })
  @IsOptional()
  @BooleanParam()
  @IsBoolean()
  dryRun?: boolean;
}

export class ReplayRunIdParams {
  @ApiProperty({ format: 'uuid', description: 'The id `POST /admin/dead-letters/replay` answered.', example: '5d1c8e0e-7d0b-4a4e-8f59-6f7a9d9e2b31' })
  @IsUUID('4', { message: 'runId must be a replay run id (a UUID)' })
  runId!: string;
}

export class DeadLetterIdParams {
  @ApiProperty({ format: 'uuid', description: 'A dead letter id, of either queue.', example: '0b7f8a52-4a0c-4c1e-9a59-3f1f2b7a6c11' })
  @IsUUID('4', { message: 'id must be a dead letter id (a UUID)' })
  // UUIDs are read in either case (RFC 4122); the ack queue's SQLite compares them as text, PostgreSQL as uuids.
  @Transform(({ value }: { value: unknown }) => (typeof value === 'string' ? value.toLowerCase() : value))
  id!: string;
}
