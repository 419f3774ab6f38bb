import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsBoolean, IsOptional } from 'class-validator';
import { BooleanParam } from '../../common/query-params';

export class SweepQuery {
  /** Count what the sweep would change, and change nothing. */
  @ApiPropertyOptional({ type: Boolean, default: false, description: 'Only count what the sweep would change; change nothing.', example: true })
  @IsOptional()
  @BooleanParam()
  @IsBoolean()
  dryRun?: boolean;
}
