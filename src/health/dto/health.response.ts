import { ApiProperty } from '@nestjs/swagger';

/** @nestjs/terminus's answer: each check by name, with `status` `up` (or `down`, in a 503's `details`). */
export class HealthCheckResponse {
  @ApiProperty({ enum: ['ok'], example: 'ok' })
  status!: 'ok';

  @ApiProperty({
    description: 'The checks that passed',
    example: {
      draining: { status: 'up' },
      database: { status: 'up' },
      migrations: { status: 'up' },
      worker: { status: 'up', role: 'all', running: true },
    },
  })
  info!: Record<string, unknown>;

  @ApiProperty({ description: 'The checks that failed (empty when ok)', example: {} })
  error!: Record<string, unknown>;

  @ApiProperty({ description: 'Every check' })
  details!: Record<string, unknown>;
}
