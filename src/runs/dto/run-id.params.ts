import { ApiProperty } from '@nestjs/swagger';
import { IsUUID } from 'class-validator';

export class SweepRunIdParams {
  @ApiProperty({
    format: 'uuid',
    description: "The id `POST /admin/sweep` answered (or the import's, from `GET /sync/status`).",
    example: '0b5f5c9e-2f4e-4d8a-9a51-8c1f7e3b6a20',
  })
  @IsUUID('4', { message: 'runId must be a sweep run id (a UUID)' })
  runId!: string;
}
