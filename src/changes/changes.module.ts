import { Module } from '@nestjs/common';
import { ChangeListener } from './change-listener.service';
import { ChangeRepository } from './change.repository';
import { ChangeSequencer } from './change-sequencer.service';
import { ChangeSignal } from './change-signal';
import { ChangesController } from './changes.controller';
import { ChangesService } from './changes.service';

/**
 * The change feed (GET /changes): the mirror writes append to it in their own statement (record-changes.ts), the
 * sequencer places committed entries, and readers follow it by cursor. The mirror modules import it for ChangeSignal;
 * retention for ChangeRepository's prune.
 */
@Module({
  controllers: [ChangesController],
  providers: [ChangeRepository, ChangeSignal, ChangeSequencer, ChangeListener, ChangesService],
  exports: [ChangeRepository, ChangeSignal, ChangeSequencer],
})
export class ChangesModule {}
