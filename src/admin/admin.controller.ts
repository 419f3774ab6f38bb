import { Controller, HttpCode, Param, Post, UseGuards } from '@nestjs/common';
import { AdminTokenGuard } from './admin-token.guard';
import { ResourceIdParams } from './dto/resource-id.params';
import { ResyncService } from './resync.service';

interface Accepted {
  accepted: true;
  reconcile: string;
}

@Controller('admin')
@UseGuards(AdminTokenGuard)
export class AdminController {
  constructor(private readonly resync: ResyncService) {}

  @Post('resync/posts/:id')
  @HttpCode(202)
  async resyncPost(@Param() params: ResourceIdParams): Promise<Accepted> {
    return { accepted: true, reconcile: await this.resync.request('post', params.id) };
  }

  @Post('resync/profiles/:id/accounts')
  @HttpCode(202)
  async resyncProfile(@Param() params: ResourceIdParams): Promise<Accepted> {
    return { accepted: true, reconcile: await this.resync.request('profile', params.id) };
  }
}
