import { Module } from '@nestjs/common';
import { ChangeListener } from './change-listener.service';
import { ChangeRepository } from './change.repository';
import { ChangeSequencer } from './change-sequencer.service';
import { ChangeSignal } from './change-signal';
import { ChangesController } from './changes.controller';
import { ChangesService } from './changes.service';
import { ConsumerRepository } from './consumer.repository';
import { ConsumersController } from './consumers.controller';
import { ConsumersService } from './consumers.service';
import { NotificationsModule } from '../notifications/notifications.module';

/**
 * The change feed (GET /changes): the mirror writes append to it in their own statement (mirror/change-notifications.ts), the
 * sequencer places committed entries, and readers follow it by cursor. The mirror modules import it for ChangeSignal;
 * retention for ChangeRepository's prune and ConsumersService's hold. Named consumers (POST /admin/consumers) are read
 * through GET /changes?consumer= and tell of their expiry by an operational webhook (notifications/).
 */
@Module({
  imports: [NotificationsModule],
  controllers: [ChangesController, ConsumersController],
  providers: [ChangeRepository, ChangeSignal, ChangeSequencer, ChangeListener, ChangesService, ConsumerRepository, ConsumersService],
  exports: [ChangeRepository, ChangeSignal, ChangeSequencer, ConsumersService],
})
export class ChangesModule {}
