import type { Dispatcher } from 'undici';
import { parseRetryAfter } from '../common/http-retry';

type Headers = Dispatcher.ResponseData['headers'];

/** A header's first value, as sent. */
export const headerText = (value: string | string[] | undefined): string | undefined => (Array.isArray(value) ? value[0] : value);

/** A header as a log line quotes it: no longer than a header worth reading. */
export function quoted(value: string): string {
  return JSON.stringify(value.length > 64 ? `${value.slice(0, 64)}…` : value);
}

/** `X-RateLimit-Limit` and `-Remaining`: digits only, a safe integer; undefined for anything else. */
export function integerHeader(value: string | string[] | undefined): number | undefined {
  const text = headerText(value)?.trim();
  if (text === undefined || !/^\d{1,15}$/.test(text)) return undefined;
  return Number(text);
}

/** `X-RateLimit-Reset`: Unix time in whole seconds (digits only), as Unix ms; undefined for anything else. */
export function rateLimitResetAt(value: string | string[] | undefined): number | undefined {
  const seconds = integerHeader(value);
  return seconds === undefined ? undefined : seconds * 1000;
}

export interface RateLimitWait {
  /** How long every replica pauses, at most the cap. */
  ms: number;
  /** What the wait came from, with the value Pozy sent: what the log line says. */
  from: string;
  /** Why the wait is not what Pozy said, when it is not (a header that does not parse, a wait past the cap). */
  adjusted?: string;
}

/**
 * How long a 429 pauses every replica: its Retry-After, else its X-RateLimit-Reset, else `fallbackMs` (the client's
 * backoff). A header that does not parse is passed over as if absent, and said; any wait is capped at `maxMs`
 * (POZY_MAX_PAUSE_MS), since it stops every replica, and is kept in the shared budget across restarts.
 */
export function rateLimitWait(headers: Headers, fallbackMs: number, maxMs: number, now = Date.now()): RateLimitWait {
  const problems: string[] = [];
  let wait: { ms: number; from: string } | undefined;
  const retryAfter = headerText(headers['retry-after']);
  if (retryAfter !== undefined) {
    const ms = parseRetryAfter(retryAfter, now);
    if (ms === undefined) problems.push(`Retry-After ${quoted(retryAfter)} is neither delta-seconds nor an HTTP-date`);
    else wait = { ms, from: `Retry-After ${quoted(retryAfter)}` };
  }
  const reset = headerText(headers['x-ratelimit-reset']);
  if (!wait && reset !== undefined) {
    const at = rateLimitResetAt(reset);
    if (at === undefined) problems.push(`X-RateLimit-Reset ${quoted(reset)} is not a Unix time in seconds`);
    else wait = { ms: Math.max(0, at - now), from: `X-RateLimit-Reset ${quoted(reset)}` };
  }
  wait ??= { ms: fallbackMs, from: 'no usable Retry-After or X-RateLimit-Reset: the backoff' };
  if (wait.ms > maxMs) {
    problems.push(`${Number.isFinite(wait.ms) ? `${Math.ceil(wait.ms / 1000)} s is` : 'it is'} longer than POZY_MAX_PAUSE_MS (${maxMs} ms)`);
    wait.ms = maxMs;
  }
  return problems.length > 0 ? { ...wait, adjusted: problems.join('; ') } : wait;
}
