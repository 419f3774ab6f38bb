/** The changes of the mirror a subscription can ask to be told about. */
export const CHANGE_TYPES = ['post.changed', 'post.deleted', 'account.changed', 'account.removed'] as const;

/** Operational events (ops-events.service.ts), to the team's own endpoint, with the same signing, retries and dead letters. */
export const OPS_EVENT_TYPES = [
  'ops.subscriber.paused',
  'ops.subscriber.recovered',
  'ops.dead_letter.added',
  'ops.budget.paused',
  'ops.import.succeeded',
  'ops.import.failed',
  'ops.webhook.disabled_in_pozy',
  'ops.objective.breached',
  'ops.objective.recovered',
  'ops.api_key.rejected',
  'ops.consumer.expired',
  'ops.database.failover',
] as const;
export type OpsEventType = (typeof OPS_EVENT_TYPES)[number];

/** What a subscription can ask to be told about. */
export const NOTIFICATION_TYPES = [...CHANGE_TYPES, ...OPS_EVENT_TYPES] as const;
export type NotificationType = (typeof NOTIFICATION_TYPES)[number];

export const isOpsEventType = (type: string): type is OpsEventType => (OPS_EVENT_TYPES as readonly string[]).includes(type);
