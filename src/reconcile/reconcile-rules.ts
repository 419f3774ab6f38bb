import type { ReadState } from './reconcile-request.repository';

/** The shortest wait before reading again a resource Pozy's answer says is missing though an event announced it. */
export const READ_LAG_MIN_RETRY_MS = 250;

/**
 * The skip rule: the events (latest at `latestEvent`, Pozy's clock) are already reflected when the last read began
 * (our clock) more than the margin after them. The margin is RECONCILE_CLOCK_SKEW_MS widened by how far our clock may
 * run ahead of Pozy's (`aheadMs`, proven by its Date headers): otherwise a change made just after a read would look older than it.
 * An operator's forced read not yet answered by a read is never skipped.
 */
export function alreadyReflected(
  latestEvent: Date | null,
  state: Pick<ReadState, 'lastReadAt' | 'forcedAt'>,
  marginMs: number,
  aheadMs: number,
): boolean {
  const { lastReadAt, forcedAt } = state;
  if (!latestEvent || !lastReadAt) return false;
  if (forcedAt && lastReadAt <= forcedAt) return false;
  return lastReadAt.getTime() > latestEvent.getTime() + marginMs + Math.max(0, aheadMs);
}

/**
 * Pozy says a resource is missing though an event received at `announcedAt` (our clock) said it exists: its reads may
 * lag its writes. Answers how long to wait before reading again (doubling: as long as has passed since the event, at
 * least READ_LAG_MIN_RETRY_MS, never past the grace), or null once the grace is over (or nothing announced it): then
 * the answer is believed.
 */
export function readLagRetryMs(announcedAt: Date | null, now: Date, graceMs: number): number | null {
  if (!announcedAt) return null;
  const elapsed = Math.max(0, now.getTime() - announcedAt.getTime());
  const left = graceMs - elapsed;
  if (left <= 0) return null;
  return Math.min(left, Math.max(READ_LAG_MIN_RETRY_MS, elapsed));
}
