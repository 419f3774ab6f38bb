import { Module } from '@nestjs/common';
import { ReconcileTask } from './reconcile.task';

@Module({ providers: [ReconcileTask] })
export class ReconcileModule {}
