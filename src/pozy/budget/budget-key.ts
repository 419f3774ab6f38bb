import { createHash } from 'node:crypto';

/**
 * The identity a Pozy API key's budget is stored under (`pozy_budget.key_id`): the first 32 hex digits (128 bits) of
 * the key's SHA-256. Never the key itself: the table is read by every replica, shown in dumps and backups, and holds
 * nothing secret, so a row must not let anyone call Pozy. 128 bits keep two keys from sharing a row by chance.
 */
export function budgetKeyId(apiKey: string): string {
  return createHash('sha256').update(apiKey, 'utf8').digest('hex').slice(0, 32);
}
