import { isIP } from 'node:net';

/** A range of addresses NOTIFY_ALLOWED_HOSTS lets subscriptions point at; a single address is a /32 or /128. */
export interface AllowedRange {
  network: string;
  prefix: number;
  family: 'ipv4' | 'ipv6';
}

/** NOTIFY_ALLOWED_HOSTS, read: host names allowed as written in a URL, and address ranges. */
export interface AllowedHosts {
  /** Lower case, without a trailing dot. */
  readonly names: readonly string[];
  readonly ranges: readonly AllowedRange[];
}

// Letters, digits, `-` and `_` (container and compose service names carry them), dot-separated, at most 253 long.
const HOST_NAME = /^(?=.{1,253}$)[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)*$/;

/** A host name as URLs and the allow list compare it: lower case, no trailing dot, an IPv6 address without brackets. */
export const normalHost = (host: string): string =>
  host
    .toLowerCase()
    .replace(/\.$/, '')
    .replace(/^\[(.*)\]$/, '$1');

type Entry = { name: string } | { range: AllowedRange } | { problem: string };

function readEntry(raw: string, position: number): Entry {
  const entry = raw.trim();
  const which = `entry ${position} (${JSON.stringify(entry)})`;
  if (entry === '') return { problem: `entry ${position} is empty (a stray comma?)` };
  const [address, prefixText, ...rest] = normalHost(entry).split('/');
  const family = isIP(address);
  if (family !== 0) {
    const bits = family === 4 ? 32 : 128;
    const type = family === 4 ? 'ipv4' : 'ipv6';
    if (prefixText === undefined) return { range: { network: address, prefix: bits, family: type } };
    const prefix = /^\d{1,3}$/.test(prefixText) ? Number(prefixText) : NaN;
    if (rest.length > 0 || !(prefix >= 0 && prefix <= bits)) return { problem: `${which} is not a CIDR: its prefix must be 0 to ${bits}` };
    return { range: { network: address, prefix, family: type } };
  }
  if (entry.includes('*')) return { problem: `${which} holds a wildcard: list each host name, or the addresses' CIDR` };
  const name = normalHost(entry);
  if (!HOST_NAME.test(name)) return { problem: `${which} is neither a host name, an IP address nor a CIDR (no scheme, port or path)` };
  return { name };
}

/** Reads a comma-separated list of host names, IP addresses and CIDRs; `problems` names each bad entry by position. */
export function readAllowedHosts(value: string | undefined): AllowedHosts & { problems: string[] } {
  const entries = value === undefined ? [] : value.split(',').map((raw, i) => readEntry(raw, i + 1));
  return {
    names: entries.flatMap((e) => ('name' in e ? [e.name] : [])),
    ranges: entries.flatMap((e) => ('range' in e ? [e.range] : [])),
    problems: entries.flatMap((e) => ('problem' in e ? [e.problem] : [])),
  };
}
