import { Module } from '@nestjs/common';
import { PozyEventRepository } from './pozy-event.repository';
import { WebhooksController } from './webhooks.controller';
import { WebhooksService } from './webhooks.service';

@Module({
  controllers: [WebhooksController],
  providers: [WebhooksService, PozyEventRepository],
})
export class WebhooksModule {}
