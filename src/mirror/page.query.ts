import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString } from 'class-validator';
import { LimitParam } from '../common/query-params';
import { WorkspaceQuery } from '../common/workspace-query';

/**
 * `limit` and `cursor`, shared by every list endpoint of the mirror, which may read the replica (`consistency`) and
 * be cut to some workspaces (`workspace`).
 */
export class PageQuery extends WorkspaceQuery {
  @LimitParam(50, 'Rows per page.')
  limit?: number;

  /** `nextCursor` of the previous page, as given. */
  @ApiPropertyOptional({ description: '`nextCursor` of the previous page, as given.', example: 'eyJhZnRlciI6IjY2YWEwMWYzYzJiMWU0ZDVmNmE3YjhjOSJ9' })
  @IsOptional()
  @IsString()
  cursor?: string;
}
