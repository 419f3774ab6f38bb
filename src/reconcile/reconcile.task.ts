import { Injectable, Logger } from '@nestjs/common';
import type { JobHelpers } from 'graphile-worker';
import { AppConfig } from '../config/app-config';
import { DeadLetterRepository } from '../dead-letters/dead-letter.repository';
import { MetricsService } from '../metrics/metrics.service';
import { PozyProtocolError, PozyUnavailableError } from '../pozy/pozy-errors';
import { JobHandler, TaskHandler } from '../queue/task-handler.decorator';
import { resourceJobKey } from '../common/resources';
import { ReconcilePayload } from '../queue/tasks';
import { DEFAULT_WORKSPACE } from '../common/workspace-id';
import { ReconcileService } from './reconcile.service';
import { ReconcileRequestRepository } from './reconcile-request.repository';
import { SpanKind } from '@opentelemetry/api';
import { PozyEventRepository } from '../receive/pozy-event.repository';
import { activeTraceId, linksTo } from '../tracing/trace-context';
import { ReconcileReadRepository } from './reconcile-read.repository';
import { OpsEvents } from '../notifications/ops-events.service';
import { Tracing } from '../tracing/tracing.service';

/** Receive spans a reconcile links to at most: a burst past it is still one read, its first events named. */
const MAX_LINKS = 32;

/**
 * The `reconcile` job: read one post or one profile's accounts from Pozy into the mirror. Exactly two kinds of
 * failure end in the delivery dead-letter queue instead of another retry: timeouts or an unreachable Pozy that have
 * lasted over DEAD_LETTER_AFTER_MS across retries, and answers retrying cannot change (a 4xx other than 404/429, a
 * malformed body). Anything else (a 5xx, our database) retries with graphile-worker's backoff.
 */
@Injectable()
@TaskHandler('reconcile')
export class ReconcileTask implements JobHandler<'reconcile'> {
  private readonly logger = new Logger(ReconcileTask.name);

  constructor(
    private readonly reconciler: ReconcileService,
    private readonly requests: ReconcileRequestRepository,
    private readonly deadLetters: DeadLetterRepository,
    private readonly config: AppConfig,
    private readonly metrics: MetricsService,
    private readonly events: PozyEventRepository,
    private readonly tracing: Tracing,
    private readonly reads: ReconcileReadRepository,
    private readonly ops: OpsEvents,
  ) {}

  async handle(payload: ReconcilePayload, helpers: JobHelpers): Promise<void> {
    if (!this.tracing.enabled) return void (await this.run(payload, helpers));
    const workspace = payload.workspace ?? DEFAULT_WORKSPACE;
    // The events this read serves: the first one's trace carries it, and it links to each (a coalesced burst).
    const parents = await this.events.traceParentsSince(
      workspace,
      payload.resource,
      payload.id,
      resourceJobKey(payload.resource, payload.id),
      MAX_LINKS,
    );
    const attributes = {
      workspaceId: workspace,
      'pozy_sync.resource': resourceJobKey(payload.resource, payload.id),
      'pozy_sync.job.id': helpers.job.id,
      'pozy_sync.job.attempt': helpers.job.attempts,
      'pozy_sync.events_served': parents.length,
    };
    const options = { kind: SpanKind.CONSUMER, parent: parents[0] ?? null, links: linksTo(parents), attributes };
    await this.tracing.span(`reconcile ${payload.resource}`, options, async (span) => {
      span.setAttribute('pozy_sync.reconcile.outcome', await this.run(payload, helpers));
    });
  }

  /** The read and its outcome (`dead_lettered` when it ended in the dead-letter queue); a failure to retry throws. */
  private async run(payload: ReconcilePayload, helpers: JobHelpers): Promise<string> {
    const workspace = payload.workspace ?? DEFAULT_WORKSPACE;
    const key = resourceJobKey(payload.resource, payload.id);
    try {
      const outcome = await this.reconciler.reconcile(workspace, payload.resource, payload.id);
      this.metrics.reconcileJobs.inc({ resource: payload.resource, outcome });
      await this.requests.clearFailing(workspace, key);
      return outcome;
    } catch (error) {
      if (error instanceof PozyProtocolError) {
        await this.deadLetter(workspace, key, payload, 'Pozy answered something retrying cannot change', error, helpers, new Date());
        return 'dead_lettered';
      }
      if (error instanceof PozyUnavailableError && error.network) {
        const { since, forMs } = await this.requests.markFailing(workspace, key);
        if (forMs > this.config.deadLetterAfterMs) {
          const reason = `Pozy timed out or was unreachable for over ${Math.round(this.config.deadLetterAfterMs / 1000)} s`;
          await this.deadLetter(workspace, key, payload, reason, error, helpers, since);
          return 'dead_lettered';
        }
      }
      this.metrics.reconcileJobs.inc({ resource: payload.resource, outcome: 'failed' });
      await this.recordFailure(workspace, key, 'failed', `${(error as Error).message}; the job retries with backoff`);
      throw error;
    }
  }

  private async deadLetter(
    workspace: string,
    key: string,
    payload: ReconcilePayload,
    reason: string,
    error: Error,
    helpers: JobHelpers,
    firstFailureAt: Date,
  ): Promise<void> {
    const id = await this.deadLetters.addReconcile({
      workspaceId: workspace,
      resourceKey: key,
      payload: { resource: payload.resource, id: payload.id },
      reason,
      error: error.message,
      attempts: helpers.job.attempts,
      firstFailureAt,
    });
    await this.requests.clearFailing(workspace, key);
    await this.recordFailure(workspace, key, 'dead_lettered', `${reason}: ${error.message} (dead letter ${id})`);
    await this.ops.emit({
      type: 'ops.dead_letter.added',
      key: `dead_letter.added:${id}`,
      workspaceId: workspace,
      data: { kind: 'reconcile', deadLetterId: id, resourceKey: key, reason },
    });
    this.metrics.reconcileJobs.inc({ resource: payload.resource, outcome: 'dead_lettered' });
    this.logger.warn({
      msg: `${key}: moved to the delivery dead-letter queue as ${id} (${reason}: ${error.message})`,
      jobId: helpers.job.id,
      deadLetterId: id,
    });
  }

  /** On the resource's timeline; a failure to record it must not hide the job's own failure. */
  private async recordFailure(workspace: string, key: string, outcome: 'failed' | 'dead_lettered', detail: string): Promise<void> {
    await this.reads.record(workspace, key, { outcome, detail, traceId: activeTraceId() }).catch((error: unknown) => {
      this.logger.warn(`${key}: its ${outcome} reconcile was not recorded on its timeline: ${String(error)}`);
    });
  }
}
