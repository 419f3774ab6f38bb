import { Module } from '@nestjs/common';
import { PozyEventRepository } from './pozy-event.repository';
import { ReconcileSignal } from './reconcile-signal';

/**
 * pozy_event's owner on its own, for the modules that read or prune events without receiving them (reconcile, retention),
 * and ReconcileSignal, which the writers of due reconcile requests raise and the dispatcher follows.
 */
@Module({
  providers: [PozyEventRepository, ReconcileSignal],
  exports: [PozyEventRepository, ReconcileSignal],
})
export class PozyEventModule {}
