import { Module } from '@nestjs/common';
import { AckSpool } from './ack-spool';
import { EventIngester } from './event-ingester';
import { EventReceiver } from './event-receiver';
import { PozyEventRepository } from './pozy-event.repository';
import { ReconcileSignal } from './reconcile-signal';
import { SpoolMetrics } from './spool-metrics';

/**
 * The receive pipeline, HTTP aside: an event's validation (EventReceiver), group commit (EventIngester), the
 * acknowledgment spool (AckSpool), and pozy_event's owner, whose receive statement also writes the events'
 * reconcile requests. ReconcileSignal tells the dispatcher when those requests fall due. The webhooks controller
 * and the backfill store through EventReceiver; reconcile and retention read and prune events here; the views read
 * the spool.
 */
@Module({
  providers: [PozyEventRepository, ReconcileSignal, EventIngester, EventReceiver, AckSpool, SpoolMetrics],
  exports: [PozyEventRepository, ReconcileSignal, EventReceiver, AckSpool],
})
export class ReceiveModule {}
