import { Module } from '@nestjs/common';
import { DeadLetterReplayRunRepository } from './dead-letter-replay-run.repository';
import { DeadLetterRepository } from './dead-letter.repository';

/** The delivery dead-letter queue's store, and the bulk replays' runs; their operator endpoints live in the admin module. */
@Module({ providers: [DeadLetterRepository, DeadLetterReplayRunRepository], exports: [DeadLetterRepository, DeadLetterReplayRunRepository] })
export class DeadLettersModule {}
