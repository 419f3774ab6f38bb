import type { Dispatcher } from 'undici';

/** undici's codes for a connection that failed or went silent: worth another try. */
const NETWORK_ERROR_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_ABORTED',
]);

/** No answer: the connection failed or went silent, or our own per-request timeout fired. */
export function isNetworkError(error: unknown): boolean {
  const { code, name } = error as { code?: unknown; name?: unknown };
  return (typeof code === 'string' && NETWORK_ERROR_CODES.has(code)) || name === 'TimeoutError' || name === 'AbortError';
}

/** `CODE (message)`, e.g. `ECONNREFUSED (connect ECONNREFUSED 127.0.0.1:9)`. */
export function describeError(error: unknown): string {
  const { code, name, message } = error as { code?: unknown; name?: unknown; message?: unknown };
  return `${typeof code === 'string' ? code : String(name)} (${String(message)})`;
}

/** Retry-After in seconds or as an HTTP date. */
export function retryAfterMs(headers: Dispatcher.ResponseData['headers']): number | undefined {
  const value = headers['retry-after'];
  const text = Array.isArray(value) ? value[0] : value;
  if (!text) return undefined;
  const seconds = Number(text);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/** Full jitter: a random wait up to the exponential bound, so retrying callers do not stampede together. */
export function fullJitterBackoff(attempt: number, baseMs: number, capMs: number): number {
  return Math.random() * Math.min(capMs, baseMs * 2 ** (attempt - 1));
}
