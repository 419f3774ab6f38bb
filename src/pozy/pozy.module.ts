import { Module } from '@nestjs/common';
import { PozyClient } from './pozy-client.service';

@Module({ providers: [PozyClient], exports: [PozyClient] })
export class PozyModule {}
