import { randomUUID } from 'node:crypto';
import { signPozyPayload } from '../../src/webhooks/webhook-signature';
import { TEST_WEBHOOK_SECRET } from './service';

export type PozyEvent = Record<string, unknown> & { id: string; event: string; timestamp: string };

export function postEvent(postId: string, event = 'post.published', overrides: Partial<PozyEvent> = {}): PozyEvent {
  return {
    id: randomUUID(),
    event,
    timestamp: new Date().toISOString(),
    post: { id: postId, content: 'Spring sale starts today', status: 'published', scheduledFor: '2026-03-02T09:00:00.000Z', platforms: [] },
    ...overrides,
  };
}

export function accountEvent(accountId: string, profileId: string, event = 'account.disconnected'): PozyEvent {
  return {
    id: randomUUID(),
    event,
    timestamp: new Date().toISOString(),
    account: { accountId, profileId, platform: 'instagram', username: 'pozy.demo' },
  };
}

export interface Delivery {
  /** Bytes, to send what no string can hold (invalid UTF-8). */
  body?: string | Buffer;
  headers?: Record<string, string | undefined>;
  secret?: string | null;
  /** Where to: `/webhooks/pozy` unless given (a workspace's own path, say). */
  path?: string;
}

/** Delivers an event the way Pozy does: JSON body, X-Pozy-* headers, hex HMAC-SHA256 signature. */
export async function deliver(
  baseUrl: string,
  event: PozyEvent | null,
  delivery: Delivery = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const body = delivery.body ?? JSON.stringify(event);
  const secret = delivery.secret === undefined ? TEST_WEBHOOK_SECRET : delivery.secret;
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': 'Pozy-Webhooks/1.0',
    ...(event ? { 'x-pozy-event': event.event, 'x-pozy-event-id': event.id } : {}),
    'x-pozy-delivery-id': randomUUID(),
    'x-pozy-attempt': '1',
    ...(secret !== null ? { 'x-pozy-signature': signPozyPayload(secret, body) } : {}),
  };
  for (const [name, value] of Object.entries(delivery.headers ?? {})) {
    if (value === undefined) delete headers[name];
    else headers[name] = value;
  }
  const response = await fetch(`${baseUrl}${delivery.path ?? '/webhooks/pozy'}`, { method: 'POST', headers, body });
  const text = await response.text();
  return { status: response.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}
