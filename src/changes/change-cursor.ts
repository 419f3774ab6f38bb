/**
 * Feed cursors are positions (decimal strings: they are bigints). Positions are dense from the oldest kept to the
 * newest, so a cursor says exactly what its holder has seen: every position up to it.
 */

/** The oldest cursor the feed still answers: just before the oldest position kept (null: the feed is empty). */
export function oldestAvailable(oldest: string | null): string | null {
  return oldest === null ? null : (BigInt(oldest) - 1n).toString();
}

/**
 * Where a reader goes on from after one read: the last entry's cursor when the page was full (`lastOfFullPage`);
 * otherwise the read saw everything up to the end of its window (`after + scan`) or the newest position, whichever
 * came first. Never before `after`: a replica behind the primary may not yet have a cursor its reader already holds.
 */
export function nextCursor(after: string, newest: string | null, scan: number, lastOfFullPage: string | null): string {
  if (lastOfFullPage !== null) return lastOfFullPage;
  const from = BigInt(after);
  const windowEnd = from + BigInt(scan);
  const top = newest === null ? from : BigInt(newest);
  const end = windowEnd < top ? windowEnd : top;
  return (end > from ? end : from).toString();
}
