import { BlockList, isIP } from 'node:net';
import { AllowedHosts, normalHost } from '../config/allowed-hosts';

/** Why an address is refused: the range it falls in and what that range is. */
export interface ForbiddenRange {
  /** The CIDR, e.g. `127.0.0.0/8`. */
  range: string;
  /** e.g. `loopback`, `private`, `cloud metadata`. */
  kind: string;
  /** For an IPv6 address that carries an IPv4 one (mapped, translated, NAT64, 6to4): that IPv4 address. */
  embedded?: string;
}

// Every range a subscriber must not be at unless NOTIFY_ALLOWED_HOSTS says so: whatever is not public unicast. The
// first match names the range, so the narrower ones come first.
const IPV4_RANGES: [string, number, string][] = [
  ['169.254.169.254', 32, 'cloud metadata'],
  ['0.0.0.0', 8, 'unspecified ("this network")'],
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'shared (carrier-grade NAT)'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local'],
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'IETF protocol assignments'],
  ['192.0.2.0', 24, 'documentation'],
  ['192.168.0.0', 16, 'private'],
  ['198.18.0.0', 15, 'benchmarking'],
  ['198.51.100.0', 24, 'documentation'],
  ['203.0.113.0', 24, 'documentation'],
  ['224.0.0.0', 4, 'multicast'],
  ['240.0.0.0', 4, 'reserved (and broadcast)'],
];

const IPV6_RANGES: [string, number, string][] = [
  ['::', 128, 'unspecified'],
  ['::1', 128, 'loopback'],
  ['::', 96, 'IPv4-compatible (deprecated)'],
  ['64:ff9b:1::', 48, 'local-use NAT64'],
  ['100::', 64, 'discard-only'],
  ['2001::', 32, 'Teredo'],
  ['2001:db8::', 32, 'documentation'],
  ['fc00::', 7, 'unique local (private)'],
  ['fe80::', 10, 'link-local'],
  ['fec0::', 10, 'site-local (deprecated)'],
  ['ff00::', 8, 'multicast'],
];

const listOf = (network: string, prefix: number, family: 'ipv4' | 'ipv6'): BlockList => {
  const list = new BlockList();
  list.addSubnet(network, prefix, family);
  return list;
};

const FORBIDDEN = [
  ...IPV4_RANGES.map(([network, prefix, kind]) => ({ list: listOf(network, prefix, 'ipv4'), family: 4, range: `${network}/${prefix}`, kind })),
  ...IPV6_RANGES.map(([network, prefix, kind]) => ({ list: listOf(network, prefix, 'ipv6'), family: 6, range: `${network}/${prefix}`, kind })),
];

/** The 16 bytes of an IPv6 address. */
function ipv6Bytes(address: string): number[] {
  // A zone (`fe80::1%eth0`) names an interface, not part of the address.
  let text = address.split('%')[0];
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted[1].split('.').map(Number);
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.includes('::') ? text.split('::') : [text, undefined];
  const groups = (part: string | undefined) => (part ? part.split(':').map((g) => parseInt(g, 16)) : []);
  const left = groups(head);
  const right = groups(tail);
  const all = tail === undefined ? left : [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
  return all.flatMap((g) => [g >> 8, g & 0xff]);
}

/**
 * The IPv4 address an IPv6 one carries: IPv4-mapped (::ffff:0:0/96), IPv4-translated (SIIT, ::ffff:0:0:0/96, RFC 6145
 * and 7915), NAT64 (64:ff9b::/96), 6to4 (2002::/16).
 */
function embeddedIpv4(address: string): string | undefined {
  const b = ipv6Bytes(address);
  const zero = (from: number, to: number) => b.slice(from, to).every((x) => x === 0);
  const dotted = (at: number) => b.slice(at, at + 4).join('.');
  if (zero(0, 10) && b[10] === 0xff && b[11] === 0xff) return dotted(12);
  if (zero(0, 8) && b[8] === 0xff && b[9] === 0xff && zero(10, 12)) return dotted(12);
  if (b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && zero(4, 12)) return dotted(12);
  if (b[0] === 0x20 && b[1] === 0x02) return dotted(2);
  return undefined;
}

/** The range an IP address is refused for, or undefined when it is public unicast. */
export function forbiddenRange(address: string): ForbiddenRange | undefined {
  const family = isIP(address);
  if (family === 0) throw new Error(`${address} is not an IP address`);
  if (family === 6) {
    const embedded = embeddedIpv4(address);
    if (embedded !== undefined) {
      const inner = forbiddenRange(embedded);
      return inner && { ...inner, embedded };
    }
  }
  const type = family === 4 ? 'ipv4' : 'ipv6';
  const match = FORBIDDEN.find((f) => f.family === family && f.list.check(address, type));
  return match && { range: match.range, kind: match.kind };
}

/** `127.0.0.1 is in 127.0.0.0/8 (loopback)`; for an IPv6 address carrying an IPv4 one, says which. */
export function describeForbidden(address: string, forbidden: ForbiddenRange): string {
  const carried = forbidden.embedded ? ` carries ${forbidden.embedded}, which` : '';
  return `${address}${carried} is in ${forbidden.range} (${forbidden.kind})`;
}

/** `localhost` and `*.localhost` are loopback by definition (RFC 6761), whatever a resolver says. */
export const isLoopbackName = (host: string): boolean => host === 'localhost' || host.endsWith('.localhost');

/**
 * Where subscribers may be: public unicast addresses, and whatever NOTIFY_ALLOWED_HOSTS allows (a host name as
 * written in the URL, whatever it resolves to; an address or range, however it was reached).
 */
export class AddressPolicy {
  private readonly names: ReadonlySet<string>;
  private readonly ranges = new BlockList();

  constructor(allowed: AllowedHosts) {
    this.names = new Set(allowed.names);
    for (const range of allowed.ranges) this.ranges.addSubnet(range.network, range.prefix, range.family);
  }

  /** The host as written in a URL (brackets, case and a trailing dot aside) is allowed whatever its addresses. */
  allowsName(host: string): boolean {
    return this.names.has(normalHost(host));
  }

  /** Why this address is refused (`127.0.0.1 is in 127.0.0.0/8 (loopback)`), or undefined when it is allowed. */
  refusalOf(address: string): string | undefined {
    const forbidden = forbiddenRange(address);
    if (!forbidden) return undefined;
    const family = isIP(address) === 4 ? 'ipv4' : 'ipv6';
    if (this.ranges.check(address, family)) return undefined;
    if (forbidden.embedded && this.ranges.check(forbidden.embedded, 'ipv4')) return undefined;
    return describeForbidden(address, forbidden);
  }

  /**
   * Why a name may not be used, from the addresses it resolves to: the first refused one (`{ address, why }`), or
   * undefined when the name is allowed as such or every address is.
   */
  refusalOfAnswers(host: string, answers: ReadonlyArray<{ address: string }>): { address: string; why: string } | undefined {
    if (this.allowsName(host)) return undefined;
    for (const { address } of answers) {
      const why = this.refusalOf(address);
      if (why) return { address, why };
    }
    return undefined;
  }

  /**
   * What can be said of a host without resolving it: `refused` with why (a loopback name, a refused address),
   * `allowed` (an allowed name, an allowed or public address), or `resolve` (a name: its addresses decide).
   */
  judgeHost(rawHost: string): { verdict: 'refused'; why: string } | { verdict: 'allowed' | 'resolve' } {
    const host = normalHost(rawHost);
    if (this.names.has(host)) return { verdict: 'allowed' };
    if (isIP(host) !== 0) {
      const why = this.refusalOf(host);
      return why ? { verdict: 'refused', why } : { verdict: 'allowed' };
    }
    if (isLoopbackName(host)) return { verdict: 'refused', why: `${host} is a loopback name` };
    return { verdict: 'resolve' };
  }
}

/** The sentence a refusal ends with: how a team can allow what it needs. */
export const ALLOW_HINT =
  'subscribers at loopback, private, link-local and other internal addresses are refused unless NOTIFY_ALLOWED_HOSTS allows them';
