import { IsUUID } from 'class-validator';

export class RunIdParams {
  @IsUUID('4', { message: 'runId must be a backfill run id (a UUID)' })
  runId!: string;
}
