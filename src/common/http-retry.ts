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

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const MONTH = `(${MONTHS.join('|')})`;
const TIME = '(\\d{2}):(\\d{2}):(\\d{2})';
/** RFC 9110's three HTTP-date forms: IMF-fixdate, and the obsolete RFC 850 and asctime ones recipients must accept. */
const IMF_FIXDATE = new RegExp(`^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), (\\d{2}) ${MONTH} (\\d{4}) ${TIME} GMT$`);
const RFC850_DATE = new RegExp(`^(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day, (\\d{2})-${MONTH}-(\\d{2}) ${TIME} GMT$`);
const ASCTIME_DATE = new RegExp(`^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) ${MONTH} ([ \\d]\\d) ${TIME} (\\d{4})$`);

/**
 * An HTTP-date (RFC 9110, section 5.6.7) as Unix ms, or undefined for anything else: JavaScript's `Date.parse` also
 * takes `5`, `-5` or `2024` for dates, which no server means by Retry-After.
 */
export function parseHttpDate(text: string, now = Date.now()): number | undefined {
  let fields: { day: string; month: string; year: number; time: string[] } | undefined;
  let m: RegExpExecArray | null;
  if ((m = IMF_FIXDATE.exec(text))) fields = { day: m[1], month: m[2], year: Number(m[3]), time: m.slice(4, 7) };
  else if ((m = RFC850_DATE.exec(text))) {
    // A two-digit year more than 50 years ahead is the latest past year with those digits (RFC 9110).
    const thisYear = new Date(now).getUTCFullYear();
    const year = thisYear - (thisYear % 100) + Number(m[3]);
    fields = { day: m[1], month: m[2], year: year > thisYear + 50 ? year - 100 : year, time: m.slice(4, 7) };
  } else if ((m = ASCTIME_DATE.exec(text))) fields = { day: m[2], month: m[1], year: Number(m[6]), time: m.slice(3, 6) };
  if (!fields) return undefined;
  const day = Number(fields.day);
  const month = MONTHS.indexOf(fields.month);
  const [hours, minutes, seconds] = fields.time.map(Number);
  // A leap second (60) is allowed, read as the next minute's first.
  if (hours > 23 || minutes > 59 || seconds > 60) return undefined;
  const at = new Date(0);
  at.setUTCFullYear(fields.year, month, day);
  // 31 Feb does not roll over into March: it is not a date.
  if (day < 1 || at.getUTCDate() !== day) return undefined;
  return at.getTime() + ((hours * 60 + minutes) * 60 + seconds) * 1000;
}

/**
 * Retry-After (RFC 9110, section 10.2.3) as a wait from `now` in ms: delta-seconds (digits only) or an HTTP-date (a
 * date past is no wait). Undefined for anything else (a sign, a fraction, an exponent, another date form), so the
 * caller falls back to what it would do without the header. An absurd number of digits can be Infinity: every
 * caller caps the wait.
 */
export function parseRetryAfter(text: string, now = Date.now()): number | undefined {
  const value = text.trim();
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const date = parseHttpDate(value, now);
  return date === undefined ? undefined : Math.max(0, date - now);
}

/** The first Retry-After header, read as `parseRetryAfter` does. */
export function retryAfterMs(headers: Dispatcher.ResponseData['headers'], now = Date.now()): number | undefined {
  const value = headers['retry-after'];
  const text = Array.isArray(value) ? value[0] : value;
  return text === undefined ? undefined : parseRetryAfter(text, now);
}

/** Full jitter: a random wait up to the exponential bound, so retrying callers do not stampede together. */
export function fullJitterBackoff(attempt: number, baseMs: number, capMs: number): number {
  return Math.random() * Math.min(capMs, baseMs * 2 ** (attempt - 1));
}
