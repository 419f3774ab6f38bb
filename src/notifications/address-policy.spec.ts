import { readAllowedHosts } from '../config/allowed-hosts';
import { AddressPolicy, forbiddenRange } from './address-policy';

const policy = (allowed?: string) => new AddressPolicy(readAllowedHosts(allowed));

describe('forbiddenRange', () => {
  it.each([
    ['127.0.0.1', '127.0.0.0/8', 'loopback'],
    ['127.255.255.254', '127.0.0.0/8', 'loopback'],
    ['10.1.2.3', '10.0.0.0/8', 'private'],
    ['172.16.0.1', '172.16.0.0/12', 'private'],
    ['172.31.255.255', '172.16.0.0/12', 'private'],
    ['192.168.1.1', '192.168.0.0/16', 'private'],
    ['169.254.169.254', '169.254.169.254/32', 'cloud metadata'],
    ['169.254.1.1', '169.254.0.0/16', 'link-local'],
    ['100.100.100.200', '100.64.0.0/10', 'shared (carrier-grade NAT)'],
    ['0.0.0.0', '0.0.0.0/8', 'unspecified ("this network")'],
    ['255.255.255.255', '240.0.0.0/4', 'reserved (and broadcast)'],
    ['224.0.0.1', '224.0.0.0/4', 'multicast'],
    ['::1', '::1/128', 'loopback'],
    ['::', '::/128', 'unspecified'],
    ['fe80::1', 'fe80::/10', 'link-local'],
    ['fc00::1', 'fc00::/7', 'unique local (private)'],
    ['fd00:ec2::254', 'fc00::/7', 'unique local (private)'],
    ['ff02::1', 'ff00::/8', 'multicast'],
    ['::127.0.0.1', '::/96', 'IPv4-compatible (deprecated)'],
  ])('refuses %s: %s (%s)', (address, range, kind) => {
    expect(forbiddenRange(address)).toEqual({ range, kind });
  });

  it.each([
    ['::ffff:127.0.0.1', '127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', '127.0.0.1', 'loopback'],
    ['::ffff:a9fe:a9fe', '169.254.169.254', 'cloud metadata'],
    ['64:ff9b::a00:1', '10.0.0.1', 'private'],
    ['2002:c0a8:101::1', '192.168.1.1', 'private'],
    // IPv4-translated (SIIT, ::ffff:0:0:0/96), in every spelling.
    ['::ffff:0:127.0.0.1', '127.0.0.1', 'loopback'],
    ['::ffff:0:7f00:1', '127.0.0.1', 'loopback'],
    ['::FFFF:0:7F00:1', '127.0.0.1', 'loopback'],
    ['0:0:0:0:ffff:0:7f00:1', '127.0.0.1', 'loopback'],
    ['0000:0000:0000:0000:ffff:0000:7f00:0001', '127.0.0.1', 'loopback'],
    ['::ffff:0:0a00:0001', '10.0.0.1', 'private'],
    ['::ffff:0:169.254.169.254', '169.254.169.254', 'cloud metadata'],
    ['::ffff:0:c0a8:101', '192.168.1.1', 'private'],
  ])('refuses %s, which carries %s (%s)', (address, embedded, kind) => {
    expect(forbiddenRange(address)).toMatchObject({ embedded, kind });
  });

  it.each([
    '93.184.215.14',
    '8.8.8.8',
    '172.32.0.1',
    '192.169.0.1',
    '2606:4700::1111',
    '::ffff:8.8.8.8',
    '::ffff:0:8.8.8.8',
    '::ffff:0:808:808',
    '64:ff9b::808:808',
    '2002:808:808::1',
  ])('lets the public address %s through', (address) => {
    expect(forbiddenRange(address)).toBeUndefined();
  });
});

describe('AddressPolicy', () => {
  it('refuses internal addresses by default, saying which range', () => {
    expect(policy().refusalOf('10.0.0.5')).toBe('10.0.0.5 is in 10.0.0.0/8 (private)');
    expect(policy().refusalOf('::ffff:7f00:1')).toBe('::ffff:7f00:1 carries 127.0.0.1, which is in 127.0.0.0/8 (loopback)');
    expect(policy().refusalOf('::ffff:0:7f00:1')).toBe('::ffff:0:7f00:1 carries 127.0.0.1, which is in 127.0.0.0/8 (loopback)');
    expect(policy().refusalOf('8.8.8.8')).toBeUndefined();
  });

  it('allows the addresses and ranges NOTIFY_ALLOWED_HOSTS lists, however they are written', () => {
    const allowing = policy('10.0.0.0/8, 127.0.0.1,fd00::/8');
    expect(allowing.refusalOf('10.200.0.1')).toBeUndefined();
    expect(allowing.refusalOf('127.0.0.1')).toBeUndefined();
    expect(allowing.refusalOf('::ffff:127.0.0.1')).toBeUndefined();
    expect(allowing.refusalOf('::ffff:0:127.0.0.1')).toBeUndefined();
    expect(allowing.refusalOf('fd12::1')).toBeUndefined();
    expect(allowing.refusalOf('127.0.0.2')).toMatch(/loopback/);
    expect(allowing.refusalOf('192.168.0.1')).toMatch(/private/);
  });

  it('judges a name by the first of its addresses that is refused, unless the name itself is allowed', () => {
    const judging = policy('receiver.internal');
    const answers = [{ address: '93.184.215.14' }, { address: '169.254.169.254' }, { address: '10.0.0.1' }];
    expect(judging.refusalOfAnswers('hooks.example.com', answers)).toEqual({
      address: '169.254.169.254',
      why: '169.254.169.254 is in 169.254.169.254/32 (cloud metadata)',
    });
    expect(judging.refusalOfAnswers('hooks.example.com', [{ address: '93.184.215.14' }])).toBeUndefined();
    expect(judging.refusalOfAnswers('Receiver.Internal.', answers)).toBeUndefined();
  });

  it('judges a host as written in a URL: literals and loopback names at once, other names by their addresses', () => {
    const judging = policy('receiver.internal,localhost');
    expect(judging.judgeHost('[::1]')).toEqual({ verdict: 'refused', why: '::1 is in ::1/128 (loopback)' });
    expect(judging.judgeHost('api.localhost')).toEqual({ verdict: 'refused', why: 'api.localhost is a loopback name' });
    expect(judging.judgeHost('localhost')).toEqual({ verdict: 'allowed' });
    expect(judging.judgeHost('Receiver.Internal.')).toEqual({ verdict: 'allowed' });
    expect(judging.judgeHost('8.8.8.8')).toEqual({ verdict: 'allowed' });
    expect(judging.judgeHost('hooks.example.com')).toEqual({ verdict: 'resolve' });
    expect(judging.allowsName('receiver.internal')).toBe(true);
    expect(judging.allowsName('other.internal')).toBe(false);
  });
});

describe('readAllowedHosts', () => {
  it('reads host names, addresses and CIDRs', () => {
    expect(readAllowedHosts('Receiver.Internal., 10.0.0.0/8,[::1],fd00::/8,hook_receiver')).toEqual({
      names: ['receiver.internal', 'hook_receiver'],
      ranges: [
        { network: '10.0.0.0', prefix: 8, family: 'ipv4' },
        { network: '::1', prefix: 128, family: 'ipv6' },
        { network: 'fd00::', prefix: 8, family: 'ipv6' },
      ],
      problems: [],
    });
  });

  it.each([
    ['a stray comma', '10.0.0.0/8,', 'entry 2 is empty (a stray comma?)'],
    ['a prefix too long', '10.0.0.0/33', 'entry 1 ("10.0.0.0/33") is not a CIDR: its prefix must be 0 to 32'],
    ['an IPv6 prefix too long', 'fd00::/129', 'entry 1 ("fd00::/129") is not a CIDR: its prefix must be 0 to 128'],
    ['a wildcard', '*.internal', 'entry 1 ("*.internal") holds a wildcard: list each host name, or the addresses\' CIDR'],
    ['a URL', 'http://receiver', 'entry 1 ("http://receiver") is neither a host name, an IP address nor a CIDR (no scheme, port or path)'],
    ['a port', 'receiver:8080', 'entry 1 ("receiver:8080") is neither a host name, an IP address nor a CIDR (no scheme, port or path)'],
  ])('names the bad entry: %s', (_case, value, problem) => {
    expect(readAllowedHosts(value).problems).toEqual([problem]);
  });
});
