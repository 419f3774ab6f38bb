import type { ResourceType } from '../common/resources';

/** Post events whose `post.id` names the post to reconcile. */
export const POST_EVENTS = [
  'post.scheduled',
  'post.published',
  'post.partial',
  'post.failed',
  'post.cancelled',
  'post.recycled',
  'post.platform.published',
  'post.platform.failed',
  'post.platform.deleted',
  'post.tiktok.url_resolved',
] as const;

/** Account events whose `account.profileId` names the profile whose accounts are reconciled. */
export const ACCOUNT_EVENTS = ['account.connected', 'account.disconnected'] as const;

export const isPostEvent = (type: unknown): boolean => (POST_EVENTS as readonly unknown[]).includes(type);
export const isAccountEvent = (type: unknown): boolean => (ACCOUNT_EVENTS as readonly unknown[]).includes(type);

export interface ResourceRef {
  type: ResourceType;
  id: string;
}
