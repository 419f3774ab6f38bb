import { Module } from '@nestjs/common';
import { ReconcileModule } from '../reconcile/reconcile.module';
import { AckSpool } from './ack-spool';
import { EventIngester } from './event-ingester';
import { PozyEventRepository } from './pozy-event.repository';
import { SpoolMetrics } from './spool-metrics';
import { WebhooksController } from './webhooks.controller';
import { WebhooksService } from './webhooks.service';

@Module({
  imports: [ReconcileModule],
  controllers: [WebhooksController],
  providers: [WebhooksService, EventIngester, PozyEventRepository, AckSpool, SpoolMetrics],
  exports: [WebhooksService, AckSpool],
})
export class WebhooksModule {}
