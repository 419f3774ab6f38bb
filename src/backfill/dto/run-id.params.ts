import { ApiProperty } from '@nestjs/swagger';
import { IsUUID } from 'class-validator';

export class RunIdParams {
  @ApiProperty({ format: 'uuid', description: 'The id `POST /admin/backfill` answered.', example: '5d1c8e0e-7d0b-4a4e-8f59-6f7a9d9e2b31' })
  @IsUUID('4', { message: 'runId must be a backfill run id (a UUID)' })
  runId!: string;
}
