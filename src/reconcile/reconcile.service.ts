import { randomUUID } from 'node:crypto';
import { Injectable, Logger } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { MetricsService } from '../metrics/metrics.service';
import { AccountMirrorRepository } from '../mirror/accounts/account-mirror.repository';
import { PostMirrorRepository } from '../mirror/posts/post-mirror.repository';
import { Lane } from '../pozy/budget/budget-policy';
import type { PozyClient } from '../pozy/pozy-client.service';
import { PozyClock } from '../pozy/pozy-clock.service';
import { PozyRateLimitedError } from '../pozy/pozy-errors';
import { ResourceType, resourceJobKey } from '../common/resources';
import { PozyEventRepository, ResourceEvents } from '../receive/pozy-event.repository';
import { ReadState, ReconcileRequestRepository } from './reconcile-request.repository';
import { alreadyReflected, readLagRetryMs } from './reconcile-rules';
import type { WorkspaceId } from '../common/workspace-id';
import { WorkspaceRegistry } from '../workspaces/workspace-registry.service';
import { Tracing } from '../tracing/tracing.service';
import { activeTraceId } from '../tracing/trace-context';
import { traceFeedEntries } from '../changes/record-changes';
import { ReconcileReadRepository } from './reconcile-read.repository';

/** An older version: what the guarded write says when it keeps the newer read the mirror holds. */
const STALE_DETAIL = 'an older version: the mirror already holds a newer read, kept';

/**
 * `dropped`: the workspace is being removed (or is gone, or detached): nothing is read. `unknown`: Pozy answered 404 for a post the mirror never held, and nothing was written. `lagging`: Pozy's answer
 * contradicts a recent event (its reads lag its writes): the read is due again shortly.
 */
export type ReconcileOutcome = 'written' | 'stale' | 'deleted' | 'unknown' | 'skipped' | 'postponed' | 'lagging' | 'dropped';

/** A paused workspace's reads wait this long, then look again (a resume nudges them at once). */
export const PAUSED_RETRY_MS = 60_000;

/** `readId`: the read's id, which the versions its write made carry (absent when the answer was not written). */
type ReadResult = {
  outcome: ReconcileOutcome;
  sentAt: Date;
  statusCode: number;
  retried: readonly string[];
  retryInMs?: number;
  detail?: string;
  readId?: string;
};

/** What a reconcile decided, as its timeline entry says it (reconcile-read.repository.ts). */
type Decision = {
  outcome: ReconcileOutcome;
  lane?: Lane;
  sentAt?: Date;
  statusCode?: number;
  retried?: readonly string[];
  detail?: string;
  readId?: string;
};

/**
 * Events are hints: reconciling a resource reads its truth from Pozy and writes it whole, guarded, to the mirror.
 * A read is skipped when the last read of the resource began after every event received for it (less the
 * clock-skew margin, widened by the measured skew, since event timestamps are Pozy's clock), since those events
 * are then already reflected (reconcile-rules.ts).
 */
@Injectable()
export class ReconcileService {
  private readonly logger = new Logger(ReconcileService.name);

  constructor(
    private readonly workspaces: WorkspaceRegistry,
    private readonly posts: PostMirrorRepository,
    private readonly accounts: AccountMirrorRepository,
    private readonly events: PozyEventRepository,
    private readonly requests: ReconcileRequestRepository,
    private readonly config: AppConfig,
    private readonly metrics: MetricsService,
    private readonly clock: PozyClock,
    private readonly tracing: Tracing,
    private readonly reads: ReconcileReadRepository,
  ) {}

  /** Reads the resource (unless its events are already reflected) and writes it; the decision goes on its timeline. */
  async reconcile(workspace: WorkspaceId, type: ResourceType, id: string): Promise<ReconcileOutcome> {
    const decision = await this.decide(workspace, type, id);
    // A workspace being removed keeps no history.
    if (decision.outcome !== 'dropped') {
      await this.reads.record(workspace, resourceJobKey(type, id), { ...decision, traceId: activeTraceId() });
    }
    return decision.outcome;
  }

  private async decide(workspace: WorkspaceId, type: ResourceType, id: string): Promise<Decision> {
    const key = resourceJobKey(type, id);
    const mirrored = this.workspaces.get(workspace);
    if (!mirrored || mirrored.state === 'removing' || mirrored.state === 'detached') return { outcome: 'dropped' };
    if (mirrored.state === 'paused') {
      await this.requests.postpone(workspace, key, PAUSED_RETRY_MS);
      return { outcome: 'postponed', detail: `the workspace is paused: looked at again in ${PAUSED_RETRY_MS / 1000} s` };
    }
    const pozy = mirrored.client;
    const [events, state] = await Promise.all([this.events.resourceEvents(workspace, type, id), this.requests.readState(workspace, key)]);
    if (alreadyReflected(events.latest, state, this.config.reconcileClockSkewMs, this.clock.aheadAtLeastMs())) {
      this.metrics.apiCallsSaved.inc({ reason: 'skipped' });
      return { outcome: 'skipped', detail: 'the skip rule: the last read began after every event received for it (less the clock-skew margin)' };
    }
    // An operator's resync (or dead-letter replay) not yet answered by a read rides its own lane; events come first.
    const lane: Lane = state.forcedAt && (!state.lastReadAt || state.lastReadAt <= state.forcedAt) ? 'operator' : 'realtime';
    let result: ReadResult;
    try {
      result =
        type === 'post'
          ? await this.reconcilePost(pozy, workspace, id, events, lane)
          : await this.reconcileProfile(pozy, workspace, id, events, lane);
    } catch (error) {
      if (!(error instanceof PozyRateLimitedError)) throw error;
      // A long Retry-After: the job ends, and the read is due again when Pozy said.
      await this.requests.postpone(workspace, key, error.retryAfterMs);
      this.logger.warn(`${key}: Pozy rate limit, read postponed by ${error.retryAfterMs} ms`);
      return { outcome: 'postponed', lane, statusCode: 429, detail: `Pozy's rate limit: read again in ${error.retryAfterMs} ms` };
    }
    const read = {
      lane,
      sentAt: result.sentAt,
      statusCode: result.statusCode,
      retried: result.retried,
      detail: result.detail,
      readId: result.readId,
    };
    if (result.retryInMs !== undefined) {
      // Not recorded as a read: the next one must not be skipped.
      await this.requests.postpone(workspace, key, result.retryInMs);
      this.logger.debug(`${key}: Pozy's answer contradicts a recent event; read again in ${result.retryInMs} ms`);
      return { ...read, outcome: 'lagging' };
    }
    await this.requests.recordRead(workspace, key, result.sentAt);
    this.observeFreshness(events, state, result.sentAt);
    this.logger.debug(`${key}: ${result.outcome}`);
    return { ...read, outcome: result.outcome };
  }

  /**
   * How long the pending read's first event waited for the mirror to reflect it. A read sent before that event
   * arrived does not reflect it (the event made a new pending read while this one ran), and one the previous read
   * already reflected was counted then: neither is counted here.
   */
  private observeFreshness(events: ResourceEvents, state: ReadState, sentAt: Date): void {
    const { requestedAt, lastReadAt } = state;
    if (!requestedAt || requestedAt > sentAt || (lastReadAt && requestedAt <= lastReadAt)) return;
    this.metrics.eventToMirror.observe({ type: events.latestType ?? 'none' }, (Date.now() - requestedAt.getTime()) / 1000);
  }

  /**
   * Whether Pozy does not know this post, which the mirror never held either: then an operator's resync has nothing
   * to read. False when the mirror holds (or held) it, or when Pozy knows it.
   */
  async unknownPost(workspace: WorkspaceId, id: string): Promise<boolean> {
    if ((await this.posts.versions(workspace, [id])).has(id)) return false;
    const pozy = this.workspaces.active(workspace)?.client;
    if (!pozy) return false;
    return !(await pozy.getPost(id, 'operator', { once: true })).found;
  }

  private async reconcilePost(pozy: PozyClient, workspace: WorkspaceId, id: string, events: ResourceEvents, lane: Lane): Promise<ReadResult> {
    const answer = await pozy.getPost(id, lane);
    const { sentAt, retried } = answer;
    // The read is dated by when the answering request was sent, not when the job began (waits and retries).
    const read = { readId: randomUUID(), startedAt: sentAt, lastEventAt: events.latest };
    if (answer.found) {
      const outcome = await this.tracing.span('mirror.write post', { attributes: { 'pozy_sync.write.kind': 'upsert' } }, async (span) => {
        const { outcome, changed, notified, entries } = await this.posts.write(workspace, answer.post, read);
        // `stale`: the guard kept a newer version the mirror already held. Written but unchanged: a re-read of the
        // same version (no feed entry, no notification).
        span.setAttributes({
          'pozy_sync.write.outcome': outcome,
          'pozy_sync.write.changed': changed > 0,
          'pozy_sync.feed.entries': changed,
          'pozy_sync.notifications.queued': notified,
        });
        await traceFeedEntries(this.tracing, entries);
        return outcome;
      });
      return { outcome, sentAt, retried, statusCode: 200, detail: outcome === 'stale' ? STALE_DETAIL : undefined, readId: read.readId };
    }
    const retryInMs = readLagRetryMs(events.announcedAt, new Date(), this.config.readLagGraceMs);
    if (retryInMs !== null) {
      const detail = `a lagging 404: Pozy does not know the post an event announced ${Date.now() - events.announcedAt!.getTime()} ms ago; read again in ${retryInMs} ms`;
      return { outcome: 'lagging', sentAt, retried, statusCode: 404, retryInMs, detail };
    }
    // A post the mirror never held gets only a tombstone (no endpoint, feed entry or notification): it keeps an older
    // read still in flight, such as an import page, from bringing the post back as live.
    return this.tracing.span('mirror.write post', { attributes: { 'pozy_sync.write.kind': 'delete' } }, async (span) => {
      const { outcome, created, entries } = await this.posts.markDeleted(workspace, id, read);
      const result = created > 0 ? 'unknown' : outcome === 'written' ? 'deleted' : 'stale';
      span.setAttributes({ 'pozy_sync.write.outcome': result, 'pozy_sync.write.changed': result === 'deleted' });
      await traceFeedEntries(this.tracing, entries);
      const detail = {
        unknown: 'Pozy answered 404 for a post the mirror never held: a tombstone only, no feed entry or notification',
        deleted: 'Pozy answered 404: the post is gone, and marked deleted',
        stale: STALE_DETAIL,
      }[result];
      return { outcome: result, sentAt, retried, statusCode: 404, detail, readId: read.readId };
    });
  }

  private async reconcileProfile(
    pozy: PozyClient,
    workspace: WorkspaceId,
    profileId: string,
    events: ResourceEvents,
    lane: Lane,
  ): Promise<ReadResult> {
    const { accounts, sentAt, retried } = await pozy.listAccounts(profileId, lane);
    // An account a recent event announced, missing from the list: Pozy's list may lag; read again before believing it.
    const listed = new Set(accounts.map((account) => account._id));
    const now = new Date();
    let retryInMs: number | null = null;
    for (const [accountId, announcedAt] of events.announcedPerAccount) {
      if (listed.has(accountId)) continue;
      const wait = readLagRetryMs(announcedAt, now, this.config.readLagGraceMs);
      if (wait !== null) retryInMs = Math.min(retryInMs ?? wait, wait);
    }
    if (retryInMs !== null) {
      const detail = `a lagging list: an account a recent event announced is missing from Pozy's list; read again in ${retryInMs} ms`;
      return { outcome: 'lagging', sentAt, retried, statusCode: 200, retryInMs, detail };
    }
    return this.tracing.span('mirror.write accounts', { attributes: { 'pozy_sync.accounts.listed': accounts.length } }, async (span) => {
      const readId = randomUUID();
      const written = await this.accounts.writeProfile(workspace, profileId, accounts, { readId, startedAt: sentAt, lastEventAt: events.perAccount });
      const outcome: ReconcileOutcome = written.written + written.removed > 0 ? 'written' : 'stale';
      span.setAttributes({
        'pozy_sync.write.outcome': outcome,
        'pozy_sync.write.changed': outcome === 'written',
        'pozy_sync.accounts.written': written.written,
        'pozy_sync.accounts.removed': written.removed,
      });
      await traceFeedEntries(this.tracing, written.entries);
      const detail = outcome === 'written' ? `${written.written} accounts written, ${written.removed} removed` : STALE_DETAIL;
      return { outcome, sentAt, retried, statusCode: 200, detail, readId };
    });
  }
}
