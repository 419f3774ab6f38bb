import { Injectable } from '@nestjs/common';
import type { JobHelpers } from 'graphile-worker';
import { JobHandler, TaskHandler } from '../queue/task-handler.decorator';
import { ReconcilePayload } from '../queue/tasks';
import { ReconcileService } from './reconcile.service';

/** The `reconcile` job: read one post or one profile's accounts from Pozy into the mirror. A failure retries with backoff. */
@Injectable()
@TaskHandler('reconcile')
export class ReconcileTask implements JobHandler<'reconcile'> {
  constructor(private readonly reconciler: ReconcileService) {}

  async handle(payload: ReconcilePayload, _helpers: JobHelpers): Promise<void> {
    await this.reconciler.reconcile(payload.resource, payload.id);
  }
}
