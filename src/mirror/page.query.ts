import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsInt, IsOptional, IsString, Max, Min } from 'class-validator';
import { IntParam } from './query-params';

/** `limit` and `cursor`, shared by every list endpoint of the mirror. */
export class PageQuery {
  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: 500, default: 50, description: 'Rows per page.', example: 50 })
  @IsOptional()
  @IntParam()
  @IsInt()
  @Min(1)
  @Max(500)
  limit?: number;

  /** `nextCursor` of the previous page, as given. */
  @ApiPropertyOptional({ description: '`nextCursor` of the previous page, as given.', example: 'eyJhZnRlciI6IjY2YWEwMWYzYzJiMWU0ZDVmNmE3YjhjOSJ9' })
  @IsOptional()
  @IsString()
  cursor?: string;
}
