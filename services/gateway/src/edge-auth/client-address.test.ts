import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import {
  ClientAddresses,
  type ForwardedHeader,
  canonicalAddress,
  parseTrustedProxies,
  rateLimitKey,
} from './client-address.transport.ts';

/** A request as the resolver reads it: the socket's peer and the headers (lower-case names, as Node gives them). */
const request = (peer: string, headers: Record<string, string | string[]> = {}) =>
  ({ socket: { remoteAddress: peer }, headers }) as unknown as IncomingMessage;

const behind = (trusted: string, header: ForwardedHeader = 'x-forwarded-for') =>
  new ClientAddresses(parseTrustedProxies(trusted), header);

describe('canonical addresses', () => {
  it.each([
    ['10.1.2.3', '10.1.2.3'],
    [' 10.1.2.3 ', '10.1.2.3'],
    ['10.1.2.3:5678', '10.1.2.3'],
    ['::ffff:10.1.2.3', '10.1.2.3'],
    ['2001:DB8:0:0:0:0:0:1', '2001:db8::1'],
    ['[2001:db8::1]:443', '2001:db8::1'],
    ['[2001:db8::1]', '2001:db8::1'],
    ['fe80::1%eth0', 'fe80::1'],
  ])('%s is %s', (written, canonical) => {
    expect(canonicalAddress(written)).toBe(canonical);
  });

  it.each(['unknown', '_hidden', '', 'example.com', '10.1.2', '[2001:db8::1', '[::1]x', '999.1.1.1'])(
    '%j is no address',
    (written) => {
      expect(canonicalAddress(written)).toBeUndefined();
    },
  );
});

describe('ZITI_TRUSTED_PROXIES', () => {
  it('takes addresses and CIDR ranges, canonical', () => {
    expect(parseTrustedProxies(undefined)).toEqual([]);
    expect(parseTrustedProxies(' 10.0.0.0/8, 192.168.1.7 ,fd00::/8,::1, 2001:DB8::/32 ')).toEqual([
      '10.0.0.0/8',
      '192.168.1.7',
      'fd00::/8',
      '::1',
      '2001:db8::/32',
    ]);
  });

  it('names every item that is not one, by position, without repeating it', () => {
    let message = '';
    try {
      parseTrustedProxies('10.0.0.0/8,10.0.0.0/33,proxy.local,fd00::/129,10.0.0.0/x,1.2.3.4');
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toBe(
      'ZITI_TRUSTED_PROXIES: items 2, 3, 4, 5 of 6 are not an IP address or CIDR range (e.g. 10.0.0.0/8, 192.168.1.7, fd00::/8)',
    );
  });
});

describe('the client address through trusted proxies', () => {
  it('is the socket peer when no proxy is trusted, whatever the headers say (the default)', () => {
    const addresses = new ClientAddresses();
    expect(addresses.of(request('::ffff:203.0.113.9', { 'x-forwarded-for': '198.51.100.1' }))).toBe('203.0.113.9');
    expect(addresses.of(request('::1', { forwarded: 'for=198.51.100.1' }))).toBe('::1');
  });

  it('ignores X-Forwarded-For from a peer that is not a trusted proxy (spoofed)', () => {
    const addresses = behind('10.0.0.0/8');
    expect(addresses.of(request('203.0.113.9', { 'x-forwarded-for': '10.0.0.5, 198.51.100.1' }))).toBe('203.0.113.9');
  });

  it('takes the right-most address that is not a trusted proxy', () => {
    const addresses = behind('10.0.0.0/8, 192.168.1.7');
    // client → (spoofed entry it wrote itself) → its real address appended by the first proxy → proxies
    const req = request('::ffff:10.0.0.2', { 'x-forwarded-for': '1.1.1.1, 198.51.100.23, 192.168.1.7, 10.0.0.9' });
    expect(addresses.of(req)).toBe('198.51.100.23');
    // One proxy: its peer.
    expect(addresses.of(request('10.0.0.2', { 'x-forwarded-for': '198.51.100.23' }))).toBe('198.51.100.23');
    // Several headers are one list, in order.
    expect(addresses.of(request('10.0.0.2', { 'x-forwarded-for': ['1.1.1.1', '198.51.100.24, 10.0.0.3'] }))).toBe(
      '198.51.100.24',
    );
  });

  it('gives a trusted proxy itself when it forwarded nothing, and the left-most of an all-trusted chain', () => {
    const addresses = behind('10.0.0.0/8');
    expect(addresses.of(request('10.0.0.2'))).toBe('10.0.0.2');
    expect(addresses.of(request('10.0.0.2', { 'x-forwarded-for': '10.0.0.7, 10.0.0.8' }))).toBe('10.0.0.7');
  });

  it('stops at a malformed entry: the trusted hop after it is the client (a broken proxy is limited as one client)', () => {
    const addresses = behind('10.0.0.0/8');
    expect(addresses.of(request('10.0.0.2', { 'x-forwarded-for': '198.51.100.1, garbage, 10.0.0.4' }))).toBe(
      '10.0.0.4',
    );
    expect(addresses.of(request('10.0.0.2', { 'x-forwarded-for': '198.51.100.1, ' }))).toBe('10.0.0.2');
  });

  it('reads IPv6 chains and ports as proxies write them', () => {
    const addresses = behind('fd00::/8');
    expect(addresses.of(request('fd00::2', { 'x-forwarded-for': '2001:DB8::42, [2001:db8::43]:5100, fd00::1' }))).toBe(
      '2001:db8::43',
    );
  });

  it('reads only the configured header: RFC 7239 Forwarded, quoted IPv6 and all', () => {
    const forwarded = behind('10.0.0.0/8', 'forwarded');
    const req = request('10.0.0.2', {
      forwarded: 'for=1.1.1.1, For="[2001:db8:cafe::17]:4711";proto=https;by=10.0.0.9, for=10.0.0.8',
      'x-forwarded-for': '198.51.100.99',
    });
    expect(forwarded.of(req)).toBe('2001:db8:cafe::17');
    // The other header is ignored: a client could have written it, the proxy only sets this one.
    expect(behind('10.0.0.0/8').of(request('10.0.0.2', { forwarded: 'for=198.51.100.1' }))).toBe('10.0.0.2');
    // An element without `for`, or `for=unknown`, breaks the chain at the trusted hop after it.
    expect(forwarded.of(request('10.0.0.2', { forwarded: 'for=198.51.100.1, for=unknown, for=10.0.0.5' }))).toBe(
      '10.0.0.5',
    );
    expect(forwarded.of(request('10.0.0.2', { forwarded: 'for="198.51.100.2";by="a,b", proto=https' }))).toBe(
      '10.0.0.2',
    );
    expect(forwarded.of(request('10.0.0.2', { forwarded: 'for="198.51.100.2";by="a,b"' }))).toBe('198.51.100.2');
  });
});

describe('the rate limit key of an address', () => {
  it('is an IPv4 address itself, an IPv6 address its /64', () => {
    expect(rateLimitKey('198.51.100.7')).toBe('198.51.100.7');
    expect(rateLimitKey('2001:db8:1:2:aaaa:bbbb:cccc:dddd')).toBe('2001:db8:1:2::/64');
    expect(rateLimitKey('2001:db8:1:2::9')).toBe(rateLimitKey('2001:db8:1:2:ffff::1'));
    expect(rateLimitKey('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(rateLimitKey('::1')).toBe('0:0:0:0::/64');
  });
});
