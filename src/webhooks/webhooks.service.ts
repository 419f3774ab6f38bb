import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import type { Counter } from 'prom-client';
import { ApiError } from '../common/api-error';
import { isJsonObject, validateInstance } from '../common/validate-dto';
import { AppConfig } from '../config/app-config';
import { decodeJsonBody } from '../http/body-parser';
import { MetricsService } from '../metrics/metrics.service';
import { PozyDeliveryHeadersDto } from './dto/pozy-delivery-headers.dto';
import { EventReceiver, WebhookReceipt } from '../receive/event-receiver';
import { matchingPozySecret } from './webhook-signature';
import { WorkspaceId } from '../common/workspace-id';
import { WorkspaceRegistry } from '../workspaces/workspace-registry.service';
import { SpanKind } from '@opentelemetry/api';
import { activeTraceparent } from '../tracing/trace-context';
import { Tracing } from '../tracing/tracing.service';

/** The label of the secret that matched, by its place in POZY_WEBHOOK_SECRET: never anything of the secret itself. */
const SECRET_POSITIONS = ['first', 'second'] as const;

type RawHeaders = Record<string, string | string[] | undefined>;

@Injectable()
export class WebhooksService implements OnModuleInit {
  private readonly logger = new Logger(WebhooksService.name);
  private readonly signatureMatches: Counter<'secret'>;

  constructor(
    private readonly config: AppConfig,
    private readonly receiver: EventReceiver,
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
    if (!workspace) throw new ApiError('unknown_workspace', `No workspace ${JSON.stringify(workspaceId)} is mirrored here`);
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
    if (!isJsonObject(body)) throw new ApiError('invalid_event', 'The event must be a JSON object');
    const envelope = this.receiver.validate(body, text, 'event');
    if (delivery.eventId !== envelope.id) {
      throw new ApiError('event_id_mismatch', `X-Pozy-Event-Id header (${delivery.eventId}) does not equal the body's id (${envelope.id})`);
    }

    const stored = { deliveryId: delivery.deliveryId ?? null, attempt: delivery.attempt ? Number(delivery.attempt) : null };
    // The receive span's own context: the reconcile that reads for this event is its child.
    const traceParent = traced ? activeTraceparent() : null;
    const receipt = traced
      ? await this.tracing.span('pozy_event.insert', {}, (span) =>
          this.receiver.store(workspaceId, envelope, text, { ...stored, traceParent }).then((receipt) => {
            span.setAttribute('pozy_sync.receive.outcome', receiptOutcome(receipt));
            return receipt;
          }),
        )
      : await this.receiver.store(workspaceId, envelope, text, stored);
    this.metrics.webhooksReceived.inc({ outcome: receiptOutcome(receipt), reason: '' });
    return receipt;
  }

  /** With the workspace's secrets: another workspace's secret does not sign this one's path. */
  private authenticate(secrets: readonly string[], rawBody: Buffer, signature: string | string[] | undefined): void {
    if (secrets.length === 0) return;
    if (signature === undefined || signature === '') {
      throw new ApiError('missing_signature', 'X-Pozy-Signature header is required');
    }
    const match = Array.isArray(signature) ? -1 : matchingPozySecret(secrets, rawBody, signature);
    if (match < 0) {
      throw new ApiError('invalid_signature', 'X-Pozy-Signature does not match the body (HMAC-SHA256 with the webhook secret)');
    }
    this.signatureMatches.inc({ secret: SECRET_POSITIONS[match] });
  }
}

/** The receipt as the received-webhooks counter and the receive span name it. */
function receiptOutcome(receipt: WebhookReceipt): 'spooled' | 'duplicate' | 'test' | 'accepted' {
  return receipt.spooled ? 'spooled' : receipt.duplicate ? 'duplicate' : receipt.test ? 'test' : 'accepted';
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new ApiError('malformed_json', `The body is not valid JSON: ${(error as Error).message}`);
  }
}
