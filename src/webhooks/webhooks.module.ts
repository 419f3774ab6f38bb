import { Module } from '@nestjs/common';
import { ReconcileModule } from '../reconcile/reconcile.module';
import { AckSpool } from './ack-spool';
import { EventIngester } from './event-ingester';
import { PozyEventModule } from './pozy-event.module';
import { SpoolMetrics } from './spool-metrics';
import { WebhooksController } from './webhooks.controller';
import { WebhooksService } from './webhooks.service';

@Module({
  imports: [ReconcileModule, PozyEventModule],
  controllers: [WebhooksController],
  providers: [WebhooksService, EventIngester, AckSpool, SpoolMetrics],
  exports: [WebhooksService, AckSpool],
})
export class WebhooksModule {}
