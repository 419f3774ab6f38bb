import { Module } from '@nestjs/common';
import { ReceiveModule } from '../receive/receive.module';
import { WebhooksController } from './webhooks.controller';
import { WebhooksService } from './webhooks.service';

/** POST /webhooks/pozy: the signature, the delivery headers and the body's bytes; the event goes on to ReceiveModule. */
@Module({
  imports: [ReceiveModule],
  controllers: [WebhooksController],
  providers: [WebhooksService],
})
export class WebhooksModule {}
