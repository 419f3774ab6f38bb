import { Module } from '@nestjs/common';
import { PozyEventRepository } from './pozy-event.repository';

/** pozy_event's owner on its own, for the modules that read or prune events without receiving them (reconcile, retention). */
@Module({
  providers: [PozyEventRepository],
  exports: [PozyEventRepository],
})
export class PozyEventModule {}
