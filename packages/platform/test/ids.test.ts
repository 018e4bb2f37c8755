import { describe, expect, it } from 'vitest';
import { base62Uuid, cuid, pooledRandomBytes, shortId } from '../src/ids.ts';

describe('entity ids', () => {
  it('shortId is 9 alphanumeric characters, cuid 25 starting with c, base62Uuid at most 22', () => {
    for (let i = 0; i < 2_000; i++) {
      expect(shortId()).toMatch(/^[0-9A-Za-z]{9}$/);
      expect(cuid()).toMatch(/^c[0-9a-z]{24}$/);
      expect(base62Uuid()).toMatch(/^[0-9A-Za-z]{1,22}$/);
    }
  });

  it('ids drawn across many pool refills never repeat', () => {
    // 20,000 short ids use ~360 KiB of pooled bytes: about ninety refills of the 4 KiB pool.
    const seen = new Set<string>();
    for (let i = 0; i < 20_000; i++) seen.add(shortId());
    expect(seen.size).toBe(20_000);
    const sessions = new Set<string>();
    for (let i = 0; i < 20_000; i++) sessions.add(cuid());
    expect(sessions.size).toBe(20_000);
  });

  it('pooled random bytes are fresh on every call, also across a refill', () => {
    const chunks = Array.from({ length: 1_000 }, () => Buffer.from(pooledRandomBytes(16)).toString('hex'));
    expect(new Set(chunks).size).toBe(chunks.length);
    // Every byte value turns up: the pool is filled, not left zero.
    const values = new Set<number>();
    for (let i = 0; i < 64; i++) for (const b of pooledRandomBytes(64)) values.add(b);
    expect(values.size).toBe(256);
    expect(() => pooledRandomBytes(4097)).toThrow(RangeError);
  });
});
