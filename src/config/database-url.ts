/**
 * libpq's connection URLs with several hosts (`postgresql://u:p@h1:5432,h2:5433/db?target_session_attrs=read-write`),
 * which node-postgres does not read: it takes one host per connection string. Such a URL becomes one single-host
 * connection string per host, in order, and the session a pool must find on one of them.
 */

/** libpq's `target_session_attrs`: which server a connection may stay on. */
export const TARGET_SESSION_ATTRS = ['any', 'read-write', 'read-only', 'primary', 'standby', 'prefer-standby'] as const;
export type TargetSessionAttrs = (typeof TARGET_SESSION_ATTRS)[number];

export interface DatabaseHost {
  /** As written, an IPv6 address in brackets. */
  host: string;
  port: number | undefined;
}

export interface DatabaseEndpoint {
  hosts: DatabaseHost[];
  /** One per host, in the URL's order: the URL with that host alone and without `target_session_attrs`. */
  connectionStrings: string[];
  targetSessionAttrs: TargetSessionAttrs;
  /** The hosts as `host:port`, for logs and errors (no credentials). */
  label: string;
}

export class DatabaseUrlError extends Error {}

const URL_SHAPE = /^(postgres(?:ql)?:\/\/)([^/?#]*)([^?#]*)(\?[^#]*)?(#.*)?$/;

/**
 * Reads a `postgres://` or `postgresql://` URL with one host or several (comma-separated, each with its own port or
 * none). `fallback` is the `target_session_attrs` used when the URL names none: `read-write` for the primary, as the
 * service writes; `any` for the read replica.
 */
export function parseDatabaseUrl(url: string, fallback: TargetSessionAttrs): DatabaseEndpoint {
  const shape = URL_SHAPE.exec(url);
  if (!shape) throw new DatabaseUrlError('must be a postgres:// or postgresql:// URL');
  const [, scheme, authority, path, query = '', fragment = ''] = shape;
  const at = authority.lastIndexOf('@');
  const userinfo = at >= 0 ? authority.slice(0, at + 1) : '';
  const hostList = at >= 0 ? authority.slice(at + 1) : authority;

  const params = new URLSearchParams(query.slice(1));
  const named = params.get('target_session_attrs');
  if (named !== null && !(TARGET_SESSION_ATTRS as readonly string[]).includes(named)) {
    throw new DatabaseUrlError(`has target_session_attrs=${named}; libpq's values are ${TARGET_SESSION_ATTRS.join(', ')}`);
  }
  params.delete('target_session_attrs');
  const rest = params.toString();
  const tail = `${path}${rest ? `?${rest}` : ''}${fragment}`;

  // No host in the authority: a Unix socket or a `host=` parameter, which node-postgres reads itself.
  const hosts = hostList === '' ? [] : hostList.split(',').map(parseHost);
  const connectionStrings = hosts.length === 0 ? [`${scheme}${userinfo}${tail}`] : hosts.map((h) => `${scheme}${userinfo}${hostPort(h)}${tail}`);
  return {
    hosts,
    connectionStrings,
    targetSessionAttrs: (named as TargetSessionAttrs | null) ?? fallback,
    label: hosts.length === 0 ? '(socket)' : hosts.map(hostPort).join(','),
  };
}

function parseHost(entry: string): DatabaseHost {
  const match = /^(\[[^\]]+\]|[^:[\]]+)(?::(\d*))?$/.exec(entry);
  if (!match) throw new DatabaseUrlError(`has a host entry "${entry}" that is not host, host:port or [v6]:port`);
  const port = match[2] ? Number(match[2]) : undefined;
  if (port !== undefined && (port < 1 || port > 65_535)) throw new DatabaseUrlError(`has a port out of range in "${entry}"`);
  return { host: match[1], port };
}

function hostPort({ host, port }: DatabaseHost): string {
  return port === undefined ? host : `${host}:${port}`;
}

/** The password a URL holds, in its user part or as a `password` parameter (empty ones left out). */
export function passwordsOf(url: string | undefined): string[] {
  const shape = URL_SHAPE.exec(url ?? '');
  if (!shape) return [];
  const authority = shape[2];
  const at = authority.lastIndexOf('@');
  const userinfo = at >= 0 ? authority.slice(0, at) : '';
  const colon = userinfo.indexOf(':');
  const inUser = colon >= 0 ? safeDecode(userinfo.slice(colon + 1)) : '';
  const inQuery = new URLSearchParams((shape[4] ?? '').slice(1)).get('password') ?? '';
  return [inUser, inQuery].filter((password) => password !== '');
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
