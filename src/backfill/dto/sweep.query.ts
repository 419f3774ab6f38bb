import { IsBoolean, IsOptional } from 'class-validator';
import { BooleanParam } from '../../mirror/query-params';

export class SweepQuery {
  /** Count what the sweep would change, and change nothing. */
  @IsOptional()
  @BooleanParam()
  @IsBoolean()
  dryRun?: boolean;
}
