import { randomBytes, randomUUID } from 'node:crypto';

const base62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/**
 * Entity ids, opaque to clients, shaped like the reference's three generators
 * (ZITI-FACTS general conventions).
 */

/** base62 of a random UUID's 128 bits (≤ 22 chars): services, configs, policies, authenticators… */
export function base62Uuid(): string {
  let n = BigInt(`0x${randomUUID().replace(/-/g, '')}`);
  let out = '';
  while (n > 0n) {
    out = base62[Number(n % 62n)] + out;
    n /= 62n;
  }
  return out || '0';
}

/** A short id (9 chars, alphanumeric): identities, edge routers, request ids. */
export function shortId(length = 9): string {
  const bytes = randomBytes(length * 2);
  let out = '';
  for (let i = 0; out.length < length && i < bytes.length; i++) {
    const b = bytes[i]!;
    if (b < 248) out += base62[b % 62];
  }
  return out.length === length ? out : shortId(length);
}

let counter = 0;
/** A cuid-like id (25 chars, starts with `c`): API sessions and edge sessions. */
export function cuid(): string {
  counter = (counter + 1) % 1679616;
  const time = Date.now().toString(36).padStart(8, '0');
  const count = counter.toString(36).padStart(4, '0');
  const rand = BigInt(`0x${randomBytes(8).toString('hex')}`)
    .toString(36)
    .padStart(12, '0')
    .slice(0, 12);
  return `c${time}${count}${rand}`;
}
