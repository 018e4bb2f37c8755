import { randomFillSync, randomUUID } from 'node:crypto';

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

/**
 * CSPRNG bytes drawn 4 KiB at a time: one call into the CSPRNG per few hundred ids instead of one
 * per id (each call costs microseconds on a login's path). Ids are not secrets; anything secret
 * (tokens, keys, nonces) draws its own bytes.
 */
const pool = Buffer.alloc(4096);
let poolOffset = pool.length;

/** `n` (≤ 4096) fresh random bytes from the pool, as a view valid until the next call. */
export function pooledRandomBytes(n: number): Buffer {
  if (n > pool.length) throw new RangeError(`at most ${pool.length} pooled random bytes at a time`);
  if (poolOffset + n > pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const out = pool.subarray(poolOffset, poolOffset + n);
  poolOffset += n;
  return out;
}

/** A short id (9 chars, alphanumeric): identities, edge routers, request ids. */
export function shortId(length = 9): string {
  let out = '';
  while (out.length < length) {
    const bytes = pooledRandomBytes(length * 2);
    // 248 = 4 × 62: bytes above it would favour the first characters.
    for (let i = 0; out.length < length && i < bytes.length; i++) if (bytes[i]! < 248) out += base62[bytes[i]! % 62];
  }
  return out;
}

let counter = 0;
/** A cuid-like id (25 chars, starts with `c`): API sessions and edge sessions. */
export function cuid(): string {
  counter = (counter + 1) % 1679616;
  const time = Date.now().toString(36).padStart(8, '0');
  const count = counter.toString(36).padStart(4, '0');
  const rand = BigInt(`0x${pooledRandomBytes(8).toString('hex')}`)
    .toString(36)
    .padStart(12, '0')
    .slice(0, 12);
  return `c${time}${count}${rand}`;
}
