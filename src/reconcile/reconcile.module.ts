import { Module } from '@nestjs/common';
import { ReconcileDispatcher } from './reconcile-dispatcher.service';
import { ReconcileTask } from './reconcile.task';

@Module({ providers: [ReconcileTask, ReconcileDispatcher], exports: [ReconcileDispatcher] })
export class ReconcileModule {}
