import { Injectable, Logger } from '@nestjs/common';
import type { Counter } from 'prom-client';
import { MetricsService } from './metrics.service';

/**
 * A promise rejected with nobody to handle it is a bug, but Node's default (ending the process) turns one library's
 * background failure (graphile-worker's, say, in a failover) into lost work for every capability. main.ts hands such
 * rejections here instead: logged with their stack and counted (`pozy_sync_unhandled_rejections_total`, which an
 * alert watches), and the process goes on.
 */
@Injectable()
export class ProcessFaults {
  private readonly logger = new Logger(ProcessFaults.name);
  private readonly rejections: Counter<'source'>;

  constructor(metrics: MetricsService) {
    this.rejections = metrics.counter({
      name: 'pozy_sync_unhandled_rejections_total',
      help: 'Promises rejected with no handler (a bug to report), by where they came from (pozy-sync, or graphile-worker): logged and counted, the process kept running',
      labelNames: ['source'] as const,
    });
    this.rejections.inc({ source: 'pozy-sync' }, 0);
  }

  unhandledRejection(reason: unknown): void {
    const source = fromGraphileWorker(reason) ? 'graphile-worker' : 'pozy-sync';
    this.rejections.inc({ source });
    this.logger.error(`Unhandled promise rejection from ${source} (a bug; the process keeps running): ${describe(reason)}`);
  }
}

/**
 * graphile-worker 0.17's local queue, released while it holds jobs and the database is gone, returns them on a promise
 * nobody holds (it throws "Cannot background something when the queue is already released" first), which rejects.
 * Nothing is lost: those jobs stay locked by a pool the heartbeat no longer keeps alive, and are released. Its 0.18
 * needs Node 22.
 */
function fromGraphileWorker(reason: unknown): boolean {
  return reason instanceof Error && /graphile-worker/.test(reason.stack ?? '');
}

function describe(reason: unknown): string {
  return reason instanceof Error ? (reason.stack ?? `${reason.name}: ${reason.message}`) : String(reason);
}
