/** What a subscription can ask to be told about. */
export const NOTIFICATION_TYPES = ['post.changed', 'post.deleted', 'account.changed', 'account.removed'] as const;
export type NotificationType = (typeof NOTIFICATION_TYPES)[number];
