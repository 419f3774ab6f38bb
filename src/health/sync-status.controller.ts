import { Controller, Get } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiErrorResponse } from '../common/error-body.dto';
import { ReadDetail, StatusAccess, StatusDetail } from '../common/read-access';
import { SyncStatus, SyncStatusService } from './sync-status.service';
import { SyncStatusResponse } from './dto/sync-status.response';
import { STATUS_UNAVAILABLE } from './status-snapshot.service';

/** How far behind the mirror is, from the database alone. */
@ApiTags('Health')
@Controller('sync')
export class SyncStatusController {
  constructor(private readonly syncStatus: SyncStatusService) {}

  @Get('status')
  @StatusAccess()
  @ApiOperation({
    summary: 'How far behind the mirror is: pending reads, jobs, events, rows, backfill gaps, notifications.',
    description:
      'Without a token (STATUS_PUBLIC=true) the answer has `redacted: true`: subscribers without id or origin, and no error texts; ' +
      'so it has with a token made with `POST /admin/tokens` for some workspaces (the figures span every one). ' +
      'With one of API_TOKENS, ADMIN_TOKEN or a token made for every workspace (or while reads are open), all of it.',
  })
  @ApiOkResponse({ type: SyncStatusResponse })
  @ApiErrorResponse({ internal_error: 'the database did not answer' })
  @ApiErrorResponse(STATUS_UNAVAILABLE)
  status(@StatusDetail() detail: ReadDetail): Promise<SyncStatus> {
    return this.syncStatus.status(detail);
  }
}
