// The client's address as the gateway sees it through the proxies an operator trusts: the socket's
// peer, or — when that peer is a trusted proxy — the address the proxies recorded in front of
// themselves (`X-Forwarded-For`, or RFC 7239 `Forwarded`). The rate limit keys on it and the
// request meta (the audit trail's `remoteAddress`, the API session's `ipAddress`) carries it.

import type { IncomingMessage } from 'node:http';
import { BlockList, isIP } from 'node:net';

/** The header the trusted proxies write the client's address in. */
export type ForwardedHeader = 'x-forwarded-for' | 'forwarded';
export const forwardedHeaders: readonly ForwardedHeader[] = ['x-forwarded-for', 'forwarded'];

/** An IPv4-mapped IPv6 address (`::ffff:10.1.2.3`) as IPv4; anything else as it is. */
function unmapped(address: string): string {
  return address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address;
}

/**
 * An address as a proxy may write it (`10.1.2.3`, `10.1.2.3:5678`, `2001:db8::1`, `[2001:db8::1]:443`,
 * `::ffff:10.1.2.3`, IPv6 in any case) in one canonical form: IPv4 dotted, IPv6 compressed lower
 * case, no port, no zone. Undefined when it is no IP address (`unknown`, an obfuscated name, junk).
 */
export function canonicalAddress(written: string): string | undefined {
  let a = written.trim();
  if (a.startsWith('[')) {
    const end = a.indexOf(']');
    if (end < 0) return undefined;
    const rest = a.slice(end + 1);
    if (rest !== '' && !/^:\d{1,5}$/.test(rest)) return undefined;
    a = a.slice(1, end);
  } else if (/^[\d.]+:\d{1,5}$/.test(a)) a = a.slice(0, a.lastIndexOf(':'));
  const zone = a.indexOf('%');
  if (zone >= 0) a = a.slice(0, zone);
  const family = isIP(a);
  if (family === 4) return a;
  if (family !== 6) return undefined;
  const mapped = unmapped(a.toLowerCase());
  if (mapped !== a.toLowerCase()) return mapped;
  // The URL parser writes an IPv6 address in its canonical (RFC 5952) form.
  return new URL(`http://[${a}]`).hostname.slice(1, -1);
}

/**
 * `ZITI_TRUSTED_PROXIES`: comma-separated IP addresses and CIDR ranges (`10.0.0.0/8`,
 * `192.168.1.7`, `fd00::/8`, `::1`), canonical. Throws one message naming every item that is
 * neither (by position: the list is configuration, its items are shown back only as counts).
 */
export function parseTrustedProxies(value: string | undefined, name = 'ZITI_TRUSTED_PROXIES'): string[] {
  if (value === undefined) return [];
  const items = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const out: string[] = [];
  const bad: number[] = [];
  items.forEach((item, i) => {
    const slash = item.indexOf('/');
    const address = canonicalAddress(slash < 0 ? item : item.slice(0, slash));
    const bits = slash < 0 ? undefined : item.slice(slash + 1);
    const max = address && isIP(address) === 4 ? 32 : 128;
    if (
      !address ||
      (slash >= 0 && item.slice(0, slash).includes('[')) ||
      (bits !== undefined && (!/^\d{1,3}$/.test(bits) || Number(bits) > max))
    ) {
      bad.push(i + 1);
      return;
    }
    out.push(bits === undefined ? address : `${address}/${Number(bits)}`);
  });
  if (bad.length > 0)
    throw new Error(
      `${name}: item${bad.length > 1 ? 's' : ''} ${bad.join(', ')} of ${items.length} ${bad.length > 1 ? 'are' : 'is'} not an IP address or CIDR range (e.g. 10.0.0.0/8, 192.168.1.7, fd00::/8)`,
    );
  return out;
}

/** The socket's peer address, an IPv4-mapped IPv6 address written as IPv4. */
export function socketAddress(req: IncomingMessage): string {
  return unmapped(req.socket.remoteAddress ?? '');
}

/** `s` split at each `sep` outside a quoted string (`"…"`, with `\\` escapes). */
function splitOutsideQuotes(s: string, sep: string): string[] {
  const parts: string[] = [];
  let current = '';
  let quoted = false;
  for (let i = 0; i < s.length; i++) {
    const ch = s[i]!;
    if (quoted && ch === '\\' && i + 1 < s.length) {
      current += ch + s[++i];
      continue;
    }
    if (ch === '"') quoted = !quoted;
    if (ch === sep && !quoted) {
      parts.push(current);
      current = '';
    } else current += ch;
  }
  parts.push(current);
  return parts;
}

/**
 * The addresses of a `Forwarded` header's elements (RFC 7239), left to right: each element's
 * `for=` parameter, unquoted; undefined for an element without one or whose value is no address
 * (`unknown`, an obfuscated `_name`): it breaks the chain.
 */
function forwardedFor(header: string): (string | undefined)[] {
  return splitOutsideQuotes(header, ',').map((element) => {
    for (const pair of splitOutsideQuotes(element, ';')) {
      const eq = pair.indexOf('=');
      if (eq < 0 || pair.slice(0, eq).trim().toLowerCase() !== 'for') continue;
      let value = pair.slice(eq + 1).trim();
      if (value.startsWith('"') && value.endsWith('"') && value.length >= 2)
        value = value.slice(1, -1).replace(/\\(.)/g, '$1');
      return canonicalAddress(value);
    }
    return undefined;
  });
}

/**
 * Resolves each request's client address. With no trusted proxy (the default) it is the socket's
 * peer. Behind trusted proxies, the chain is read from the configured header only, and only when
 * the peer is one of them: walking from the right (the hop nearest to the gateway), the first
 * address that is not a trusted proxy is the client, so whatever a client wrote into the header
 * itself (to the left) is never taken; a malformed entry ends the walk at the trusted hop after it;
 * a chain of trusted proxies only gives its left-most address.
 */
export class ClientAddresses {
  private readonly trusted?: BlockList;

  constructor(
    trustedProxies: readonly string[] = [],
    private readonly header: ForwardedHeader = 'x-forwarded-for',
  ) {
    if (trustedProxies.length === 0) return;
    this.trusted = new BlockList();
    for (const entry of trustedProxies) {
      const [address, bits] = entry.split('/') as [string, string | undefined];
      const family = isIP(address) === 4 ? 'ipv4' : 'ipv6';
      if (bits === undefined) this.trusted.addAddress(address, family);
      else this.trusted.addSubnet(address, Number(bits), family);
    }
  }

  private isTrusted(address: string): boolean {
    return this.trusted!.check(address, isIP(address) === 4 ? 'ipv4' : 'ipv6');
  }

  /** The client's address of a request. */
  of(req: IncomingMessage): string {
    const peer = socketAddress(req);
    if (!this.trusted || !this.isTrusted(peer)) return peer;
    const raw = req.headers[this.header];
    const header = Array.isArray(raw) ? raw.join(',') : raw;
    if (!header) return peer;
    const chain = this.header === 'forwarded' ? forwardedFor(header) : header.split(',').map(canonicalAddress);
    let nearest = peer;
    for (let i = chain.length - 1; i >= 0; i--) {
      const address = chain[i];
      if (address === undefined) return nearest;
      if (!this.isTrusted(address)) return address;
      nearest = address;
    }
    return nearest;
  }
}

/**
 * The rate limit's key of a client address: an IPv4 address itself; an IPv6 address by its /64
 * (one subscriber's network: a host given a /64 could otherwise take a fresh bucket per address).
 */
export function rateLimitKey(address: string): string {
  if (isIP(address) !== 6) return address;
  const canonical = canonicalAddress(address) ?? address;
  // Expand `::` to get the first four groups.
  const [head, tail] = canonical.split('::') as [string, string | undefined];
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups =
    tail === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  return `${groups
    .slice(0, 4)
    .map((g) => g || '0')
    .join(':')}::/64`;
}
