import { Module } from '@nestjs/common';
import { DeadLetterRepository } from './dead-letter.repository';

/** The delivery dead-letter queue's store; its operator endpoints live in the admin module. */
@Module({ providers: [DeadLetterRepository], exports: [DeadLetterRepository] })
export class DeadLettersModule {}
