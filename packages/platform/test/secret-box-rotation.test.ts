import { describe, expect, it } from 'vitest';
import { type SealedRecord, type SealedRecords, SecretBox, SecretBoxError, resealRecords } from '../src/secret-box.ts';

const oldKey = SecretBox.generateSecret();
const newKey = SecretBox.generateSecret();

describe('SecretBox key rotation', () => {
  it('re-seals only what a previous key sealed', () => {
    const rotating = new SecretBox(newKey, { previousSecrets: [oldKey] });
    const old = new SecretBox(oldKey).encrypt('totp-secret', { context: 'mfa:a' });
    const fresh = rotating.resealIfStale(old, { context: 'mfa:a' });
    expect(fresh).toBeDefined();
    expect(new SecretBox(newKey).decryptString(fresh!, { context: 'mfa:a' })).toBe('totp-secret');
    expect(rotating.resealIfStale(fresh!, { context: 'mfa:a' })).toBeUndefined();
    // The context still binds: a token moved elsewhere opens with no key.
    expect(() => rotating.resealIfStale(old, { context: 'mfa:b' })).toThrow(SecretBoxError);
  });

  it('walks records in batches, writes only what changed, and counts what no key opens', async () => {
    const old = new SecretBox(oldKey);
    const lost = new SecretBox(SecretBox.generateSecret());
    const rows = new Map<string, Record<string, string>>();
    for (let i = 0; i < 5; i++) rows.set(`r${i}`, { a: old.encrypt(`a${i}`, { context: `a:${i}` }) });
    rows.set('r5', { a: new SecretBox(newKey).encrypt('a5', { context: 'a:5' }) });
    rows.set('r6', { a: lost.encrypt('a6', { context: 'a:6' }) });
    const transactions: string[][] = [];
    const writes: string[] = [];
    const transaction = async <T>(fn: (records: SealedRecords) => Promise<T>) => {
      const seen: string[] = [];
      transactions.push(seen);
      return fn({
        lock: async (after, limit) => {
          const keys = [...rows.keys()]
            .sort()
            .filter((k) => after === undefined || k > after)
            .slice(0, limit);
          seen.push(...keys);
          return keys.map((key): SealedRecord => ({
            key,
            fields: [{ name: 'a', context: `a:${key.slice(1)}`, token: rows.get(key)!.a! }],
          }));
        },
        write: async (key, fields) => {
          writes.push(key);
          rows.set(key, { ...rows.get(key)!, ...fields });
        },
      });
    };
    const box = new SecretBox(newKey, { previousSecrets: [oldKey] });
    const dry = await resealRecords(box, transaction, { batchSize: 3, dryRun: true });
    expect(dry).toMatchObject({ records: 7, resealed: 5, current: 1, unreadable: 1, unreadableKeys: ['r6'] });
    expect(writes).toEqual([]);
    const counts = await resealRecords(box, transaction, { batchSize: 3 });
    expect(counts).toEqual({ records: 7, values: 7, resealed: 5, current: 1, unreadable: 1, unreadableKeys: ['r6'] });
    expect(writes).toEqual(['r0', 'r1', 'r2', 'r3', 'r4']);
    expect(transactions.at(-3)).toEqual(['r0', 'r1', 'r2']);
    expect(transactions.at(-1)).toEqual(['r6']);
    expect(await resealRecords(box, transaction, { batchSize: 3 })).toMatchObject({ resealed: 0, current: 6 });
  });
});
