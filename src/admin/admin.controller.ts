import { Controller, HttpCode, Param, Post, UseGuards } from '@nestjs/common';
import { ApiAcceptedResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiErrorResponse, ApiInvalidRequestResponse } from '../common/error-body.dto';
import { ApiAdminAuth } from '../http/openapi';
import { AdminTokenGuard } from '../common/admin-token.guard';
import { ResourceIdParams } from './dto/resource-id.params';
import { ResyncAcceptedResponse } from './dto/resync.response';
import { ResyncService } from './resync.service';

interface Accepted {
  accepted: true;
  reconcile: string;
}

@ApiTags('Admin: resync')
@ApiAdminAuth()
@Controller('admin')
@UseGuards(AdminTokenGuard)
export class AdminController {
  constructor(private readonly resync: ResyncService) {}

  @Post('resync/posts/:id')
  @HttpCode(202)
  @ApiOperation({ summary: 'Read this post from Pozy now.' })
  @ApiAcceptedResponse({ type: ResyncAcceptedResponse, description: 'The read is queued, due now.' })
  @ApiErrorResponse({ unknown_to_pozy: 'Pozy does not know the post, and the mirror never held it; nothing is queued' })
  @ApiInvalidRequestResponse('`id` is not a Pozy id (24 lower-case hexadecimal digits)')
  async resyncPost(@Param() params: ResourceIdParams): Promise<Accepted> {
    return { accepted: true, reconcile: await this.resync.request('post', params.id) };
  }

  @Post('resync/profiles/:id/accounts')
  @HttpCode(202)
  @ApiOperation({ summary: "Read this profile's accounts from Pozy now." })
  @ApiAcceptedResponse({ type: ResyncAcceptedResponse, description: 'The read is queued, due now.' })
  @ApiInvalidRequestResponse('`id` is not a Pozy id (24 lower-case hexadecimal digits)')
  async resyncProfile(@Param() params: ResourceIdParams): Promise<Accepted> {
    return { accepted: true, reconcile: await this.resync.request('profile', params.id) };
  }
}
