import { MADE_TOKEN_FORM } from '../common/bearer-token';

/** Query parameters whose values are taken for secrets by their name alone. */
const SECRET_NAME = /token|secret|key|password|signature|auth/i;
const REDACTED = '[redacted]';
const NONE: ReadonlySet<string> = new Set();

const percentDecode = (text: string): string => {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
};

/**
 * Every way a server may read `text`: as sent, percent-decoded, and percent-decoded with `+` as a space (a query
 * value read as a form). A base64 secret's `+` and `/` then match however the client spelled them: raw, `%2B`, `%2F`.
 */
const readings = (text: string): string[] => [text, percentDecode(text), percentDecode(text.replace(/\+/g, ' '))];

/**
 * A request's URL as it may be logged: the values of query parameters named like secrets (`?token=`, `?api_key=`),
 * and any query value or path segment holding one of the configured secrets or a token made through the API, are
 * replaced by `[redacted]`. A client
 * that puts a token in the URL is refused, but its request line is still written: the token must not be in it.
 * Everything else is kept as sent, so the line still shows what was asked.
 */
export function redactUrl(url: string, secrets: readonly string[], exact: ReadonlySet<string> = NONE): string {
  // A secret's `+` may also have been read as a space, wherever its value was decoded as a form.
  const spellings = secrets.flatMap((secret) => (secret.includes('+') ? [secret, secret.replace(/\+/g, ' ')] : [secret]));
  const holdsSecret = (raw: string) =>
    readings(raw).some(
      (value) =>
        // A token made through the API, by its form: no list of them is at hand here.
        MADE_TOKEN_FORM.test(value) ||
        // The workspaces' keys and secrets: thousands, so only as a whole value (a Set lookup per value).
        exact.has(value) ||
        // A short secret only when the whole value is it: as a part, it would hide half the log.
        spellings.some((secret) => (secret.length >= 8 ? value.includes(secret) : value === secret)),
    );
  const queryAt = url.indexOf('?');
  const path = queryAt === -1 ? url : url.slice(0, queryAt);
  const safePath = redactPath(path, holdsSecret, Math.max(1, ...secrets.map((secret) => secret.split('/').length)));
  if (queryAt === -1) return safePath;
  const query = url
    .slice(queryAt + 1)
    .split('&')
    .map((pair) => {
      const equals = pair.indexOf('=');
      if (equals === -1) return holdsSecret(pair) ? REDACTED : pair;
      const name = pair.slice(0, equals);
      if (holdsSecret(name)) return REDACTED;
      if (readings(name).some((reading) => SECRET_NAME.test(reading)) || holdsSecret(pair.slice(equals + 1))) return `${name}=${REDACTED}`;
      // A secret with base64's `=` padding, sent as a parameter's name, is split at its first `=`.
      return holdsSecret(pair) ? REDACTED : pair;
    })
    .join('&');
  return `${safePath}?${query}`;
}

/**
 * The path with every run of segments that holds a secret replaced by one `[redacted]`. A secret with a raw `/` spans
 * segments, so runs of up to `widest` segments (the most a configured secret's slashes make) are looked at.
 */
function redactPath(path: string, holdsSecret: (raw: string) => boolean, widest: number): string {
  const segments = path.split('/');
  const hidden = segments.map(() => false);
  for (let first = 0; first < segments.length; first++) {
    for (let last = first; last < Math.min(segments.length, first + widest); last++) {
      const run = segments.slice(first, last + 1).join('/');
      if (run === '' || !holdsSecret(run)) continue;
      // Only the segments the secret spans: when the run without its first one still holds it, a later run will.
      if (last === first || !holdsSecret(segments.slice(first + 1, last + 1).join('/'))) hidden.fill(true, first, last + 1);
      break;
    }
  }
  return segments.flatMap((segment, i) => (!hidden[i] ? [segment] : hidden[i - 1] ? [] : [REDACTED])).join('/');
}
