import { Controller, HttpCode, Post, UseGuards } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AdminTokenGuard } from '../common/admin-token.guard';
import { ApiError } from '../common/api-error';
import { ApiErrorResponse } from '../common/error-body.dto';
import { ApiAdminAuth } from '../http/openapi';
import { PruneResponse } from './dto/prune.response';
import { PruneResult, RetentionService } from './retention.service';

@ApiTags('Admin: retention')
@ApiAdminAuth()
@Controller('admin/retention')
@UseGuards(AdminTokenGuard)
export class RetentionController {
  constructor(private readonly retention: RetentionService) {}

  /** Prunes now and answers the rows deleted per table; 409 while a prune runs on any replica. */
  @Post()
  @HttpCode(200)
  @ApiOperation({ summary: 'Prune rows older than the retention periods now; answers the rows deleted per table.' })
  @ApiOkResponse({ type: PruneResponse })
  @ApiErrorResponse({ retention_running: 'a prune is already running on some replica' })
  async prune(): Promise<PruneResult> {
    const result = await this.retention.pruneExclusive();
    if (!result) throw new ApiError('retention_running', 'A retention prune is already running');
    return result;
  }
}
