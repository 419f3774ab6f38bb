import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import type { Counter } from 'prom-client';
import { ApiError } from '../common/api-error';
import { parseInstant } from '../common/instant';
import { findUnstorable, unstorableJsonNumber } from '../common/storable-text';
import { isJsonObject, validateInstance } from '../common/validate-dto';
import { AppConfig } from '../config/app-config';
import { decodeJsonBody } from '../http/body-parser';
import { MetricsService } from '../metrics/metrics.service';
import { resourceJobKey } from '../common/resources';
import { PozyDeliveryHeadersDto } from './dto/pozy-delivery-headers.dto';
import { PozyEventEnvelopeDto } from './dto/pozy-event.dto';
import { isAccountEvent, isPostEvent, ResourceRef } from './pozy-events';
import { isEventDataError } from './event-data-error';
import { EventIngester } from './event-ingester';
import { matchingPozySecret } from './webhook-signature';
import { WorkspaceId } from '../common/workspace-id';
import { WorkspaceRegistry } from '../workspaces/workspace-registry.service';
import { SpanKind } from '@opentelemetry/api';
import { activeTraceparent } from '../tracing/trace-context';
import { Tracing } from '../tracing/tracing.service';

/** The label of the secret that matched, by its place in POZY_WEBHOOK_SECRET: never anything of the secret itself. */
const SECRET_POSITIONS = ['first', 'second'] as const;

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

type RawHeaders = Record<string, string | string[] | undefined>;

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

@Injectable()
export class WebhooksService implements OnModuleInit {
  private readonly logger = new Logger(WebhooksService.name);
  private readonly signatureMatches: Counter<'secret'>;

  constructor(
    private readonly config: AppConfig,
    private readonly ingester: EventIngester,
    private readonly metrics: MetricsService,
    private readonly workspaces: WorkspaceRegistry,
    private readonly tracing: Tracing,
  ) {
    // While a rotation is under way, this says when Pozy stopped signing with the old secret: it can then go.
    this.signatureMatches = metrics.counter({
      name: 'pozy_sync_webhook_signature_matches_total',
      help: 'Deliveries whose X-Pozy-Signature matched, by the place in POZY_WEBHOOK_SECRET of the secret that signed them (first, second)',
      labelNames: ['secret'] as const,
    });
    for (const position of SECRET_POSITIONS.slice(0, config.pozy.webhookSecrets.length)) this.signatureMatches.inc({ secret: position }, 0);
  }

  onModuleInit(): void {
    if (this.workspaces.environmentDefinesDefault && this.config.pozy.webhookSecrets.length === 0) {
      this.logger.warn('POZY_WEBHOOK_SECRET is not set: webhooks are accepted WITHOUT signature checks. Set it to your Pozy webhook secret.');
    }
  }

  /**
   * Authenticates the raw bytes, then parses and validates, then stores once and enqueues. A workspace this
   * deployment does not mirror is a 404 before anything else: there is no secret to check the bytes with.
   */
  receive(workspaceId: WorkspaceId, rawBody: Buffer, headers: RawHeaders, route: string): Promise<WebhookReceipt> {
    if (!this.tracing.enabled) return this.accept(workspaceId, rawBody, headers, false);
    // The delivery's own trace, or Pozy's when it sends a traceparent.
    const incoming = headers.traceparent;
    const attributes = {
      'http.request.method': 'POST',
      'http.route': route,
      workspaceId,
      ...(typeof headers['x-pozy-event-id'] === 'string' ? { 'pozy.event.id': headers['x-pozy-event-id'] } : {}),
      ...(typeof headers['x-pozy-delivery-id'] === 'string' ? { 'pozy.delivery.id': headers['x-pozy-delivery-id'] } : {}),
      ...(typeof headers['x-pozy-attempt'] === 'string' ? { 'pozy.delivery.attempt': headers['x-pozy-attempt'] } : {}),
    };
    const parent = typeof incoming === 'string' ? incoming : null;
    return this.tracing.span(`POST ${route}`, { kind: SpanKind.SERVER, parent, attributes }, async (span) => {
      try {
        const receipt = await this.accept(workspaceId, rawBody, headers, true);
        span.setAttributes({
          'http.response.status_code': 200,
          'pozy_sync.receive.outcome': receiptOutcome(receipt),
          ...(receipt.reconcile ? { 'pozy_sync.reconcile.key': receipt.reconcile } : {}),
        });
        return receipt;
      } catch (error) {
        span.setAttribute('http.response.status_code', error instanceof ApiError ? error.status : 500);
        throw error;
      }
    });
  }

  /** `traced`: inside the receive span, whose steps are spans too and whose context is stored with the event. */
  private async accept(workspaceId: WorkspaceId, rawBody: Buffer, headers: RawHeaders, traced: boolean): Promise<WebhookReceipt> {
    const workspace = this.workspaces.receiving(workspaceId);
    if (!workspace) throw new ApiError(404, 'unknown_workspace', `No workspace ${JSON.stringify(workspaceId)} is mirrored here`);
    if (traced) {
      await this.tracing.span('webhook.verify_signature', {}, async () => this.authenticate(workspace.secrets, rawBody, headers['x-pozy-signature']));
    } else {
      this.authenticate(workspace.secrets, rawBody, headers['x-pozy-signature']);
    }
    const delivery = validateInstance(
      PozyDeliveryHeadersDto.fromHeaders(headers),
      { code: 'invalid_headers', what: 'delivery headers' },
      PozyDeliveryHeadersDto.quickCheck,
    );
    // After the signature: a body that is not UTF-8 is still 401 unless signed with the secret.
    const text = decodeJsonBody(rawBody);
    const body = parseJson(text);
    if (!isJsonObject(body)) throw new ApiError(400, 'invalid_event', 'The event must be a JSON object');
    const envelope = this.validateEvent(body, text, 'event');
    if (delivery.eventId !== envelope.id) {
      throw new ApiError(400, 'event_id_mismatch', `X-Pozy-Event-Id header (${delivery.eventId}) does not equal the body's id (${envelope.id})`);
    }

    const stored = { deliveryId: delivery.deliveryId ?? null, attempt: delivery.attempt ? Number(delivery.attempt) : null };
    // The receive span's own context: the reconcile that reads for this event is its child.
    const traceParent = traced ? activeTraceparent() : null;
    const receipt = traced
      ? await this.tracing.span('pozy_event.insert', {}, (span) =>
          this.store(workspaceId, envelope, text, { ...stored, traceParent }).then((receipt) => {
            span.setAttribute('pozy_sync.receive.outcome', receiptOutcome(receipt));
            return receipt;
          }),
        )
      : await this.store(workspaceId, envelope, text, stored);
    this.metrics.webhooksReceived.inc({ outcome: receiptOutcome(receipt), reason: '' });
    return receipt;
  }

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
      const envelope = this.validateEvent(payload, text, 'logged event');
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
  private validateEvent(body: Record<string, unknown>, text: string, what: string): PozyEventEnvelopeDto {
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

  private async store(
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
          throw new ApiError(400, 'invalid_event', `PostgreSQL cannot store this event: ${(error as Error).message}`);
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

  /** With the workspace's secrets: another workspace's secret does not sign this one's path. */
  private authenticate(secrets: readonly string[], rawBody: Buffer, signature: string | string[] | undefined): void {
    if (secrets.length === 0) return;
    if (signature === undefined || signature === '') {
      throw new ApiError(401, 'missing_signature', 'X-Pozy-Signature header is required');
    }
    const match = Array.isArray(signature) ? -1 : matchingPozySecret(secrets, rawBody, signature);
    if (match < 0) {
      throw new ApiError(401, 'invalid_signature', 'X-Pozy-Signature does not match the body (HMAC-SHA256 with the webhook secret)');
    }
    this.signatureMatches.inc({ secret: SECRET_POSITIONS[match] });
  }
}

/** Pozy's payloads nest a few levels; PostgreSQL's jsonb gives up somewhere past 10,000 (its max_stack_depth). */
const MAX_EVENT_DEPTH = 100;

function invalidEvent(what: string, field: string, problem: string): ApiError {
  return new ApiError(400, 'invalid_event', `Invalid ${what}: ${field}: ${problem}`, [{ field, problems: [problem] }]);
}

/** The receipt as the received-webhooks counter and the receive span name it. */
function receiptOutcome(receipt: WebhookReceipt): 'spooled' | 'duplicate' | 'test' | 'accepted' {
  return receipt.spooled ? 'spooled' : receipt.duplicate ? 'duplicate' : receipt.test ? 'test' : 'accepted';
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new ApiError(400, 'malformed_json', `The body is not valid JSON: ${(error as Error).message}`);
  }
}

function resourceOf(envelope: PozyEventEnvelopeDto): ResourceRef | null {
  if (isPostEvent(envelope.event) && envelope.post) return { type: 'post', id: envelope.post.id };
  if (isAccountEvent(envelope.event) && envelope.account) return { type: 'profile', id: envelope.account.profileId };
  return null;
}
