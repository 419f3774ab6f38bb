import { Injectable } from '@nestjs/common';
import { DatabaseService } from '../database/database.service';
import { DeadLetterRepository } from '../dead-letters/dead-letter.repository';
import { SyncStatus, SyncStatusService } from '../health/sync-status.service';
import { MetricsService } from '../metrics/metrics.service';
import { AckSpool } from '../webhooks/ack-spool';

/** Dead letters shown on the page, across both queues. */
export const PAGE_DEAD_LETTERS = 20;

/** The Pozy routes a reconcile reads: what "calls saved" are saved from. */
const READ_ROUTES = new Set(['GET /v1/posts/:id', 'GET /v1/accounts']);

// Sixty one-minute buckets ending with the current one, on the database's clock (received_at is stamped by it);
// counted before the join so the BRIN index on received_at serves one range scan.
const EVENTS_PER_MINUTE = `
WITH counts AS (
  SELECT date_trunc('minute', received_at) AS minute, count(*)::int AS count
    FROM pozy_event
   WHERE received_at >= date_trunc('minute', now()) - interval '59 minutes'
   GROUP BY 1
)
SELECT m.minute, coalesce(c.count, 0)::int AS count
  FROM generate_series(date_trunc('minute', now()) - interval '59 minutes', date_trunc('minute', now()), interval '1 minute') AS m(minute)
  LEFT JOIN counts c USING (minute)
 ORDER BY m.minute`;

export interface PageDeadLetter {
  id: string;
  queue: 'delivery' | 'ack';
  kind: string;
  /** The resource (delivery) or the event (ack) the letter is about. */
  subject: string;
  reason: string;
  error: string;
  attempts: number;
  deadAt: Date;
  replayedAt: Date | null;
  /** Why the letter needs no replay any more (a newer version was delivered), if so. */
  resolution: string | null;
}

export interface StatusPageData {
  generatedAt: Date;
  status: SyncStatus;
  eventsPerMinute: Array<{ minute: Date; count: number }>;
  /** This process's counters: they start at zero with it. */
  apiCalls: { coalesced: number; skipped: number; pozyReads: number; pozyRequests: number; countingSince: Date };
  deadLetters: PageDeadLetter[];
}

@Injectable()
export class StatusPageService {
  // Created with the module, like the MetricsService counters it reads.
  private readonly countingSince = new Date();

  constructor(
    private readonly syncStatus: SyncStatusService,
    private readonly database: DatabaseService,
    private readonly metrics: MetricsService,
    private readonly deadLetterRepository: DeadLetterRepository,
    private readonly spool: AckSpool,
  ) {}

  async gather(): Promise<StatusPageData> {
    const [status, perMinute, delivery, apiCalls] = await Promise.all([
      this.syncStatus.status(),
      this.database.pool.query<{ minute: Date; count: number }>(EVENTS_PER_MINUTE),
      this.deadLetterRepository.list(PAGE_DEAD_LETTERS),
      this.apiCalls(),
    ]);
    const letters: PageDeadLetter[] = [
      ...delivery.map((l) => ({
        id: l.id,
        queue: 'delivery' as const,
        kind: l.kind,
        subject: l.resourceKey,
        reason: l.reason,
        error: l.error,
        attempts: l.attempts,
        deadAt: l.createdAt,
        replayedAt: l.replayedAt,
        resolution: l.resolvedAt ? l.resolution : null,
      })),
      ...this.spool.dead(PAGE_DEAD_LETTERS).map((l) => ({
        id: l.id,
        queue: 'ack' as const,
        kind: 'event',
        subject: `${l.eventType} ${l.eventId}`,
        reason: 'the database never acknowledged the event',
        error: l.lastError,
        attempts: l.attempts,
        deadAt: l.deadAt ?? l.spooledAt,
        replayedAt: null,
        resolution: null,
      })),
    ];
    letters.sort((a, b) => b.deadAt.getTime() - a.deadAt.getTime());
    return {
      generatedAt: new Date(),
      status,
      eventsPerMinute: perMinute.rows,
      apiCalls,
      deadLetters: letters.slice(0, PAGE_DEAD_LETTERS),
    };
  }

  private async apiCalls(): Promise<StatusPageData['apiCalls']> {
    const [saved, requests] = await Promise.all([this.metrics.apiCallsSaved.get(), this.metrics.pozyRequests.get()]);
    const savedBy = (reason: string) => saved.values.filter((v) => v.labels.reason === reason).reduce((sum, v) => sum + v.value, 0);
    return {
      coalesced: savedBy('coalesced'),
      skipped: savedBy('skipped'),
      pozyReads: requests.values.filter((v) => READ_ROUTES.has(String(v.labels.route))).reduce((sum, v) => sum + v.value, 0),
      pozyRequests: requests.values.reduce((sum, v) => sum + v.value, 0),
      countingSince: this.countingSince,
    };
  }
}
