import { randomBytes } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import type { ReadDetail } from '../common/read-access';
import { SharedComputation } from '../common/shared-computation';
import { AppConfig } from '../config/app-config';
import { PAGE_DEAD_LETTERS } from '../health/status-snapshot.service';
import { Estimate, MinuteCount } from '../health/sync-figures.repository';
import { SyncStatus, SyncStatusService } from '../health/sync-status.service';
import { MetricsService } from '../metrics/metrics.service';
import { AckSpool } from '../receive/ack-spool';
import { renderStatusPage } from './status-page.template';

/** The Pozy routes a reconcile reads: what "calls saved" are saved from. */
const READ_ROUTES = new Set(['GET /v1/posts/:id', 'GET /v1/accounts']);

export interface PageDeadLetter {
  id: string;
  queue: 'delivery' | 'ack';
  kind: string;
  /** The resource (delivery) or the event (ack) the letter is about; null on the public page. */
  subject: string | null;
  /** The admin path of the resource's timeline (a post's or a profile's), when it has one; null on the public page. */
  timeline: string | null;
  /** Written by this service from a few templates (what failed, for how long): no data of Pozy's or a subscriber's. */
  reason: string;
  /** What Pozy, a subscriber or the database answered; null on the public page. */
  error: string | null;
  attempts: number;
  deadAt: Date;
  replayedAt: Date | null;
  /** Why the letter needs no replay any more (a newer version was delivered), if so. */
  resolution: string | null;
}

export interface StatusPageData {
  generatedAt: Date;
  status: SyncStatus;
  /** Sixty one-minute buckets ending with the current one (the database's clock: it stamps received_at). */
  eventsPerMinute: Estimate<MinuteCount[]>;
  /** This process's counters: they start at zero with it. */
  apiCalls: { coalesced: number; skipped: number; pozyReads: number; pozyRequests: number; countingSince: Date };
  deadLetters: PageDeadLetter[];
}

@Injectable()
export class StatusPageService {
  // Created with the module, like the MetricsService counters it reads.
  private readonly countingSince = new Date();
  /**
   * The page as the figures' reading gives it, rendered once per reading for every caller of the same detail: a flood of
   * GET / costs a copy of the page each, not its rendering (most of a request's time). Each response still gets a nonce
   * of its own, put in place of the placeholder the rendering carries.
   */
  private readonly rendered: Record<ReadDetail, SharedComputation<{ html: string; placeholder: string }>>;

  constructor(
    private readonly syncStatus: SyncStatusService,
    private readonly metrics: MetricsService,
    private readonly spool: AckSpool,
    config: AppConfig,
  ) {
    const render = (detail: ReadDetail) => async () => {
      const placeholder = randomBytes(16).toString('hex');
      return { html: renderStatusPage(await this.gather(detail), placeholder), placeholder };
    };
    this.rendered = {
      full: new SharedComputation(render('full'), config.statusCacheMs),
      public: new SharedComputation(render('public'), config.statusCacheMs),
    };
  }

  /** The page, with `nonce` on its inline style and script. */
  async page(detail: ReadDetail, nonce: string): Promise<string> {
    const { html, placeholder } = await this.rendered[detail].get();
    return html.split(placeholder).join(nonce);
  }

  /** `public`: without the letters' subjects and errors, and the status without ids and error texts (publicStatus). */
  private async gather(detail: ReadDetail): Promise<StatusPageData> {
    const [{ status, eventsPerMinute, deadLetters: delivery }, apiCalls] = await Promise.all([this.syncStatus.snapshot(detail), this.apiCalls()]);
    const letters: PageDeadLetter[] = [
      ...delivery.map((l) => ({
        id: l.id,
        queue: 'delivery' as const,
        kind: l.kind,
        subject: l.resourceKey,
        timeline: timelinePath(l.workspaceId, l.resourceKey),
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
        timeline: null,
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
      eventsPerMinute,
      apiCalls,
      // The letters' own ids stay: the Replay buttons need them, and replaying takes the admin token.
      deadLetters: letters
        .slice(0, PAGE_DEAD_LETTERS)
        .map((letter) => (detail === 'full' ? letter : { ...letter, subject: null, timeline: null, error: null })),
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

/** `post:<id>` and `profile:<id>` have a timeline (an account's is its profile's, which the key does not name). */
function timelinePath(workspaceId: string, resourceKey: string): string | null {
  const match = /^(post|profile):([0-9a-f]{24})$/.exec(resourceKey);
  if (!match) return null;
  return `/admin/${match[1] === 'post' ? 'posts' : 'profiles'}/${match[2]}/timeline?workspace=${encodeURIComponent(workspaceId)}`;
}
