import { Injectable, OnModuleDestroy } from '@nestjs/common';
import { Webhook } from 'standardwebhooks';
import { Agent, request } from 'undici';
import { boundedText } from '../common/bounded-text';
import { describeError, isNetworkError, retryAfterMs } from '../common/http-retry';
import { AppConfig } from '../config/app-config';
import { traceHeaders } from '../tracing/trace-context';
import { ForbiddenAddressError, SubscriberAddressGuard } from './subscriber-address-guard';

/** One notification as it goes out: the same id and body on every attempt and replay. */
export interface OutgoingNotification {
  id: string;
  type: string;
  createdAt: Date;
  data: unknown;
}

export interface Endpoint {
  url: string;
  /** `whsec_` + base64, in plaintext: the current secret, and the previous one while a rotation's overlap lasts. */
  secrets: readonly string[];
}

export type AttemptResult =
  | { ok: true; statusCode: number; durationMs: number }
  | {
      ok: false;
      /** Null when nothing answered. */
      statusCode: number | null;
      durationMs: number;
      error: string;
      /** Timed out or unreachable: what the dead-letter rule counts. A 502/503/504 counts too (a proxy saying so). */
      unreachable: boolean;
      /** A 4xx that no retry can change, a redirect, or an address refused. */
      permanent: boolean;
      /** Why a permanent failure is one, when not a 4xx: what the dead letter's `reason` says. */
      permanentReason?: PermanentReason;
      retryAfterMs?: number;
    };

/** `redirect`: a 3xx, never followed; `forbidden_address`: the subscriber is at an internal address (never connected). */
export type PermanentReason = 'redirect' | 'forbidden_address';

const UNREACHABLE_STATUSES = new Set([502, 503, 504]);
// 408 (timeout), 425 (too early) and 429 (rate limited) are the 4xx that another try can change.
const RETRYABLE_4XX = new Set([408, 425, 429]);

/** The JSON body of a notification: Standard Webhooks' `{ type, timestamp, data }`. */
export const notificationBody = (notification: OutgoingNotification): string =>
  JSON.stringify({ type: notification.type, timestamp: notification.createdAt.toISOString(), data: notification.data });

/** Signing objects kept for reuse: far more than the subscriptions a deployment sends to at once. */
const MAX_SIGNERS = 1_000;

/**
 * POSTs one notification, signed as Standard Webhooks says (`webhook-id`, `webhook-timestamp`, `webhook-signature`),
 * with the id also as `Idempotency-Key`, and says what came of it. It never throws: every outcome is an attempt
 * to record. Subscribers get their own connection pool, apart from Pozy's, which connects only to addresses the
 * guard allows. Redirects are never followed: the subscription's URL is where notifications go, and the guard
 * judged that one.
 */
@Injectable()
export class NotificationSender implements OnModuleDestroy {
  private readonly agent: Agent;
  private readonly signers = new Map<string, Webhook>();

  constructor(
    private readonly config: AppConfig,
    guard: SubscriberAddressGuard,
  ) {
    this.agent = new Agent({
      connections: config.notify.concurrency,
      connect: guard.connector(config.notify.timeoutMs),
      headersTimeout: config.notify.timeoutMs,
      bodyTimeout: config.notify.timeoutMs,
    });
  }

  async onModuleDestroy(): Promise<void> {
    await this.agent.close();
  }

  async send(endpoint: Endpoint, notification: OutgoingNotification): Promise<AttemptResult> {
    const body = notificationBody(notification);
    const now = new Date();
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    try {
      const response = await request(endpoint.url, {
        method: 'POST',
        dispatcher: this.agent,
        body,
        headers: {
          'content-type': 'application/json',
          'user-agent': 'pozy-sync',
          'webhook-id': notification.id,
          'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
          // Standard Webhooks: space-separated signatures, any of which verifies (one per secret during an overlap).
          'webhook-signature': endpoint.secrets.map((secret) => this.signer(secret).sign(notification.id, now, body)).join(' '),
          'idempotency-key': notification.id,
          // W3C Trace Context: the subscriber's own spans can join the delivery's trace.
          ...traceHeaders(),
        },
        signal: AbortSignal.timeout(this.config.notify.timeoutMs),
      });
      // Read (and drop) the answer, so the connection can be reused; past 64 KiB it is not read but closed. Nothing
      // of it is kept: an attempt's error says the status.
      await response.body.dump({ limit: 64 * 1024 });
      const statusCode = response.statusCode;
      if (statusCode >= 200 && statusCode < 300) return { ok: true, statusCode, durationMs: elapsed() };
      if (statusCode >= 300 && statusCode < 400) {
        const location = locationOrigin(response.headers.location);
        return {
          ok: false,
          statusCode,
          durationMs: elapsed(),
          error: `HTTP ${statusCode}${location ? ` to ${location}` : ''}: redirects are not followed; give the subscription the URL that receives`,
          unreachable: false,
          permanent: true,
          permanentReason: 'redirect',
        };
      }
      return {
        ok: false,
        statusCode,
        durationMs: elapsed(),
        error: `HTTP ${statusCode}`,
        unreachable: UNREACHABLE_STATUSES.has(statusCode),
        permanent: statusCode >= 400 && statusCode < 500 && !RETRYABLE_4XX.has(statusCode),
        retryAfterMs: statusCode === 429 || statusCode === 503 ? retryAfterMs(response.headers) : undefined,
      };
    } catch (error) {
      if (error instanceof ForbiddenAddressError) {
        return {
          ok: false,
          statusCode: null,
          durationMs: elapsed(),
          error: error.message,
          unreachable: false,
          permanent: true,
          permanentReason: 'forbidden_address',
        };
      }
      const network = isNetworkError(error);
      return { ok: false, statusCode: null, durationMs: elapsed(), error: boundedText(describeError(error)), unreachable: network, permanent: false };
    }
  }

  /**
   * The signing object of a secret, least recently used ones dropped past MAX_SIGNERS: secrets rotated away or of
   * deleted subscriptions leave memory instead of adding up for the life of the process.
   */
  private signer(secret: string): Webhook {
    let signer = this.signers.get(secret);
    if (signer) this.signers.delete(secret);
    else signer = new Webhook(secret);
    this.signers.set(secret, signer);
    if (this.signers.size > MAX_SIGNERS) this.signers.delete(this.signers.keys().next().value!);
    return signer;
  }
}

/** Where a redirect pointed, origin only: its path and query may carry a token. */
function locationOrigin(location: string | string[] | undefined): string | undefined {
  const text = Array.isArray(location) ? location[0] : location;
  if (!text) return undefined;
  try {
    return new URL(text).origin;
  } catch {
    return undefined;
  }
}
