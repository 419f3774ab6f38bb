import type { FastifyInstance } from 'fastify';
import { MetricsService } from '../metrics/metrics.service';
import { POZY_WEBHOOK_ROUTES } from './webhooks.controller';

/**
 * Counts the refusals of POST /webhooks/pozy (and /webhooks/pozy/:workspace) by reason, and times every answer, at the HTTP layer: refusals by the
 * body parser (413, 415, malformed JSON) never reach the controller, yet are refusals Pozy saw. Accepted deliveries
 * are counted by WebhooksService, which knows their outcome without parsing the answer again.
 */
export function instrumentWebhookRoute(fastify: FastifyInstance, metrics: MetricsService): void {
  fastify.addHook('onSend', (request, reply, payload, done) => {
    if (reply.statusCode >= 400 && isReceiveRoute(request.routeOptions.url) && request.method === 'POST') {
      metrics.webhooksReceived.inc({ outcome: 'rejected', reason: reasonOf(reply.statusCode, payload) });
    }
    done(null, payload);
  });
  fastify.addHook('onResponse', (request, reply, done) => {
    if (isReceiveRoute(request.routeOptions.url) && request.method === 'POST') {
      metrics.receiveDuration.observe({ status: String(reply.statusCode) }, reply.elapsedTime / 1000);
    }
    done();
  });
}

const isReceiveRoute = (url: string | undefined) => url !== undefined && POZY_WEBHOOK_ROUTES.includes(url);

/** The error code of the JSON error body (see common/error-response.ts), or the status. */
function reasonOf(status: number, payload: unknown): string {
  try {
    const body: unknown = typeof payload === 'string' || Buffer.isBuffer(payload) ? JSON.parse(payload.toString()) : null;
    const code = (body as { error?: unknown } | null)?.error;
    return typeof code === 'string' ? code : String(status);
  } catch {
    return String(status);
  }
}
