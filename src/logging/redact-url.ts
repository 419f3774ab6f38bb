/** Query parameters whose values are taken for secrets by their name alone. */
const SECRET_NAME = /token|secret|key|password|signature|auth/i;
const REDACTED = '[redacted]';

const decode = (text: string): string => {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    return text;
  }
};

/**
 * A request's URL as it may be logged: the values of query parameters named like secrets (`?token=`, `?api_key=`),
 * and any query value or path segment holding one of the configured secrets, are replaced by `[redacted]`. A client
 * that puts a token in the URL is refused, but its request line is still written: the token must not be in it.
 * Everything else is kept as sent, so the line still shows what was asked.
 */
export function redactUrl(url: string, secrets: readonly string[]): string {
  const holdsSecret = (raw: string) => {
    const value = decode(raw);
    // A short secret only when the whole value is it: as a part, it would hide half the log.
    return secrets.some((secret) => (secret.length >= 8 ? value.includes(secret) : value === secret));
  };
  const queryAt = url.indexOf('?');
  const path = queryAt === -1 ? url : url.slice(0, queryAt);
  const safePath = path
    .split('/')
    .map((segment) => (segment !== '' && holdsSecret(segment) ? REDACTED : segment))
    .join('/');
  if (queryAt === -1) return safePath;
  const query = url
    .slice(queryAt + 1)
    .split('&')
    .map((pair) => {
      const equals = pair.indexOf('=');
      const name = equals === -1 ? pair : pair.slice(0, equals);
      if (holdsSecret(name)) return REDACTED;
      if (equals === -1) return pair;
      return SECRET_NAME.test(decode(name)) || holdsSecret(pair.slice(equals + 1)) ? `${name}=${REDACTED}` : pair;
    })
    .join('&');
  return `${safePath}?${query}`;
}
