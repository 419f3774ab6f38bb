import { Injectable, Logger } from '@nestjs/common';
import type { JobHelpers } from 'graphile-worker';
import { JobHandler, TaskHandler } from '../queue/task-handler.decorator';
import { ReconcilePayload } from '../queue/tasks';

/**
 * Reads the truth about one resource from Pozy and writes it to the mirror. Until the Pozy client and the mirror
 * exist (issue 3), it only records that the job ran.
 */
@Injectable()
@TaskHandler('reconcile')
export class ReconcileTask implements JobHandler<'reconcile'> {
  private readonly logger = new Logger(ReconcileTask.name);

  async handle(payload: ReconcilePayload, helpers: JobHelpers): Promise<void> {
    this.logger.debug(`Reconcile ${payload.resource}:${payload.id} (job ${helpers.job.id}, attempt ${helpers.job.attempts})`);
  }
}
