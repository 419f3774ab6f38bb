import { Controller, Get } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiErrorResponse } from '../common/error-body.dto';
import { SyncStatus, SyncStatusService } from './sync-status.service';
import { SyncStatusResponse } from './dto/sync-status.response';

/** How far behind the mirror is, from the database alone. */
@ApiTags('Health')
@Controller('sync')
export class SyncStatusController {
  constructor(private readonly syncStatus: SyncStatusService) {}

  @Get('status')
  @ApiOperation({ summary: 'How far behind the mirror is: pending reads, jobs, events, rows, backfill gaps, notifications.' })
  @ApiOkResponse({ type: SyncStatusResponse })
  @ApiErrorResponse(500, '`internal_error`: the database did not answer.')
  status(): Promise<SyncStatus> {
    return this.syncStatus.status();
  }
}
