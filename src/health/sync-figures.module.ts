import { Module } from '@nestjs/common';
import { SyncFiguresRepository } from './sync-figures.repository';

/** The figures GET /sync/status, the status page and /metrics share; on its own so that /metrics needs nothing else. */
@Module({ providers: [SyncFiguresRepository], exports: [SyncFiguresRepository] })
export class SyncFiguresModule {}
