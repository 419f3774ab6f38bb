import { Injectable } from '@nestjs/common';
import { ApiError } from '../common/api-error';
import { parseInstant } from '../common/instant';
import { resourceJobKey } from '../common/resources';
import { findUnstorable, unstorableJsonNumber } from '../common/storable-text';
import { validateInstance } from '../common/validate-dto';
import { WorkspaceId } from '../common/workspace-id';
import { AppConfig } from '../config/app-config';
import { activeTraceparent } from '../tracing/trace-context';
import { PozyEventEnvelopeDto } from './dto/pozy-event.dto';
import { isEventDataError } from './event-data-error';
import { EventIngester } from './event-ingester';
import { isAccountEvent, isPostEvent, ResourceRef } from './pozy-events';

export interface WebhookReceipt {
  received: true;
  /** The workspace whose path received it. */
  workspaceId: WorkspaceId;
  eventId: string;
  /** True when this event id was already stored: nothing was done again. */
  duplicate: boolean;
  /** Present when the database did not acknowledge in time: the event is safe in the local spool. */
  spooled?: true;
  /** Present for Pozy's test events: stored, flagged, and nothing else. */
  test?: true;
  /** The resource this new event asks to read again (`post:<id>`, `profile:<id>`); null for duplicates, tests, unknown types. */
  reconcile: string | null;
}

/**
 * What became of a logged event the backfill sent: `stored` (new), `duplicate` (stored already), `spooled` (safe in
 * the spool), or `refused`: the event itself is not one we can store (`invalid_event`: malformed, data PostgreSQL refuses,
 * or older than events are kept), so no later run could store it either. Anything else (overloaded, the database) is thrown: the
 * event was not stored, and the run must not go past it.
 */
export type RecoveredOutcome = { outcome: 'stored' | 'duplicate' | 'spooled' } | { outcome: 'refused'; reason: string };

const DAY_MS = 86_400_000;
/**
 * An event is refused once older than EVENT_RETENTION_DAYS less this: a copy of it received then may be pruned
 * already, and it would be stored (and read) again as new. The day covers a clock of Pozy's running ahead of ours
 * (the event's timestamp is Pozy's, retention counts from when we received it) and the prune's hourly cadence.
 */
export const STALE_EVENT_MARGIN_DAYS = 1;

/**
 * The receive pipeline's entrance for an event already authenticated: the envelope and what PostgreSQL would refuse
 * are judged here, then the event is stored once (EventIngester) and its resource's read requested. Pozy's
 * deliveries come through WebhooksService (signature, headers, body), the events the backfill finds in Pozy's
 * delivery log straight here.
 */
@Injectable()
export class EventReceiver {
  constructor(
    private readonly config: AppConfig,
    private readonly ingester: EventIngester,
  ) {}

  /**
   * An event Pozy logged but never delivered to us, from `GET /v1/webhooks/logs` (read with our API key, so no
   * signature): validated and stored exactly like a delivery. A refusal of the event itself resolves `refused`;
   * every other failure rejects.
   */
  async receiveRecovered(
    workspaceId: WorkspaceId,
    payload: Record<string, unknown>,
    recoveredBy: string,
    attempt: number | null,
  ): Promise<RecoveredOutcome> {
    try {
      const text = JSON.stringify(payload);
      const envelope = this.validate(payload, text, 'logged event');
      // In a backfill page's span: the read it causes joins the run's trace.
      const traceParent = activeTraceparent();
      const receipt = await this.store(workspaceId, envelope, text, { deliveryId: null, attempt, recoveredBy, traceParent });
      return { outcome: receipt.spooled ? 'spooled' : receipt.duplicate ? 'duplicate' : 'stored' };
    } catch (error) {
      if (error instanceof ApiError && error.code === 'invalid_event') return { outcome: 'refused', reason: error.message };
      throw error;
    }
  }

  /**
   * The envelope, then what PostgreSQL would refuse, decided here and not by the insert: an event the database
   * cannot store gets the same 400 whether the database answers in time or the event would have been spooled.
   */
  validate(body: Record<string, unknown>, text: string, what: string): PozyEventEnvelopeDto {
    const envelope = validateInstance(PozyEventEnvelopeDto.fromJson(body), { code: 'invalid_event', what }, PozyEventEnvelopeDto.quickCheck);
    const unstorable = findUnstorable(body, '', MAX_EVENT_DEPTH);
    if (unstorable) throw invalidEvent(what, unstorable.field, `${unstorable.field} ${unstorable.problem}`);
    const number = unstorableJsonNumber(text);
    if (number) throw invalidEvent(what, 'body', `body holds a number PostgreSQL cannot store (${number}…)`);
    // An event dated far ahead would stay the resource's latest, and the skip rule would skip every read after it.
    const ahead = parseInstant(envelope.timestamp)!.getTime() - Date.now();
    if (ahead > this.config.eventMaxFutureMs) {
      throw invalidEvent(
        what,
        'timestamp',
        `timestamp is ${Math.round(ahead / 1000)} s ahead of this server's clock (at most EVENT_MAX_FUTURE_MS = ${this.config.eventMaxFutureMs} ms)`,
      );
    }
    // Older than events are kept: its first copy may be pruned already, and it would be stored again as new.
    const age = -ahead;
    const maxAgeMs = (this.config.retention.eventRetentionDays - STALE_EVENT_MARGIN_DAYS) * DAY_MS;
    if (age > maxAgeMs) {
      throw invalidEvent(
        what,
        'timestamp',
        `timestamp is ${(age / DAY_MS).toFixed(1)} days old: events older than EVENT_RETENTION_DAYS (${this.config.retention.eventRetentionDays}) ` +
          `less ${STALE_EVENT_MARGIN_DAYS} day are refused, since their first copy may be pruned already and they would be stored again as new`,
      );
    }
    return envelope;
  }

  async store(
    workspaceId: WorkspaceId,
    envelope: PozyEventEnvelopeDto,
    text: string,
    delivery: { deliveryId: string | null; attempt: number | null; recoveredBy?: string; traceParent?: string | null },
  ): Promise<WebhookReceipt> {
    const test = envelope.test === true;
    // Test events never change mirrored data; unknown event types are kept but change nothing.
    const resource = test ? null : resourceOf(envelope);
    const reconcile = resource && { key: resourceJobKey(resource.type, resource.id), type: resource.type, id: resource.id };
    const outcome = await this.ingester
      .store({
        workspaceId,
        id: envelope.id,
        type: envelope.event,
        payloadJson: text,
        timestamp: parseInstant(envelope.timestamp)!,
        deliveryId: delivery.deliveryId,
        attempt: delivery.attempt,
        test,
        reconcile,
        recoveredBy: delivery.recoveredBy ?? null,
        traceParent: delivery.traceParent ?? null,
      })
      .catch((error: unknown) => {
        // validateEvent refuses what PostgreSQL is known to refuse; should it still refuse something, the sender's
        // payload, not our database, is at fault.
        if (isEventDataError(error)) {
          throw new ApiError('invalid_event', `PostgreSQL cannot store this event: ${(error as Error).message}`);
        }
        throw error;
      });
    if (outcome === 'spooled') return { received: true, workspaceId, eventId: envelope.id, duplicate: false, spooled: true, reconcile: null };
    return {
      received: true,
      workspaceId,
      eventId: envelope.id,
      duplicate: outcome === 'duplicate',
      ...(test ? { test: true as const } : {}),
      reconcile: outcome === 'stored' ? (reconcile?.key ?? null) : null,
    };
  }
}

/** Pozy's payloads nest a few levels; PostgreSQL's jsonb gives up somewhere past 10,000 (its max_stack_depth). */
const MAX_EVENT_DEPTH = 100;

function invalidEvent(what: string, field: string, problem: string): ApiError {
  return new ApiError('invalid_event', `Invalid ${what}: ${field}: ${problem}`, [{ field, problems: [problem] }]);
}

function resourceOf(envelope: PozyEventEnvelopeDto): ResourceRef | null {
  if (isPostEvent(envelope.event) && envelope.post) return { type: 'post', id: envelope.post.id };
  if (isAccountEvent(envelope.event) && envelope.account) return { type: 'profile', id: envelope.account.profileId };
  return null;
}
