import type { FastifyInstance } from 'fastify';
import { POZY_WEBHOOK_PATH } from '../webhooks/webhooks.controller';
import { MetricsService, WebhookOutcome } from './metrics.service';

/**
 * Counts every answer of POST /webhooks/pozy by outcome, and times it, at the HTTP layer: rejections by the body
 * parser (413, 415, malformed JSON) never reach the controller, yet are rejections Pozy saw.
 */
export function instrumentWebhookRoute(fastify: FastifyInstance, metrics: MetricsService): void {
  fastify.addHook('onSend', (request, reply, payload, done) => {
    if (request.routeOptions.url === POZY_WEBHOOK_PATH && request.method === 'POST') {
      const { outcome, reason } = outcomeOf(reply.statusCode, payload);
      metrics.webhooksReceived.inc({ outcome, reason });
    }
    done(null, payload);
  });
  fastify.addHook('onResponse', (request, reply, done) => {
    if (request.routeOptions.url === POZY_WEBHOOK_PATH && request.method === 'POST') {
      metrics.receiveDuration.observe({ status: String(reply.statusCode) }, reply.elapsedTime / 1000);
    }
    done();
  });
}

function outcomeOf(status: number, payload: unknown): { outcome: WebhookOutcome; reason: string } {
  const body = parse(payload);
  if (status >= 400) return { outcome: 'rejected', reason: typeof body.error === 'string' ? body.error : String(status) };
  if (body.spooled === true) return { outcome: 'spooled', reason: '' };
  if (body.duplicate === true) return { outcome: 'duplicate', reason: '' };
  if (body.test === true) return { outcome: 'test', reason: '' };
  return { outcome: 'accepted', reason: '' };
}

function parse(payload: unknown): Record<string, unknown> {
  try {
    const value: unknown = typeof payload === 'string' || Buffer.isBuffer(payload) ? JSON.parse(payload.toString()) : null;
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
