import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { infra, uniqueName } from '../../../../test/support/infra.ts';
import { circuit, circuitStoreContract } from '../../test/circuit-store-contract.ts';
import { RedisCircuitStore } from './redis-circuit.store.ts';

/**
 * The Redis circuit store on the real Redis, under a key prefix of this run's own (removed after):
 * the shared contract, with every other "replica" a client of its own on the same keys, and the
 * key layout the store documents.
 */
const prefix = `${uniqueName('zt')}:`;
const opened: RedisCircuitStore[] = [];
const raw = new Redis(infra.redisUrl);

function open(): RedisCircuitStore {
  const store = new RedisCircuitStore(infra.redisUrl, prefix);
  opened.push(store);
  return store;
}

async function keys(pattern = `${prefix}*`): Promise<string[]> {
  const out: string[] = [];
  let cursor = '0';
  do {
    const [next, found] = await raw.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    out.push(...found);
  } while (cursor !== '0');
  return out.sort();
}

afterAll(async () => {
  for (const s of opened) await s.close();
  const left = await keys();
  if (left.length > 0) await raw.del(...left);
  await raw.quit();
});

circuitStoreContract('redis', () => ({ store: open(), another: open, leftovers: () => keys() }));

describe('Redis circuit key layout', () => {
  const store = open();
  const p = `${prefix}fc:`;

  it('keeps the JSON under c:<id> and the ids in s:<session> and r:<router> sets, all gone after remove', async () => {
    const c = circuit({ sessionId: 'layout-session', path: ['layout-r1', 'layout-r2', 'layout-r1'] });
    await store.add(c);
    expect(JSON.parse((await raw.get(`${p}c:${c.id}`))!)).toEqual(c);
    expect(await raw.smembers(`${p}s:layout-session`)).toEqual([c.id]);
    expect(await raw.smembers(`${p}r:layout-r1`)).toEqual([c.id]);
    expect(await raw.smembers(`${p}r:layout-r2`)).toEqual([c.id]);
    await store.remove(c.id);
    expect(await keys()).toEqual([]);
  });

  it('count counts only this prefix’s circuits', async () => {
    const other = new RedisCircuitStore(infra.redisUrl, `${prefix}other:`);
    opened.push(other);
    const c = circuit();
    await other.add(c);
    expect(await store.count()).toBe(0);
    expect(await other.count()).toBe(1);
    await other.remove(c.id);
  });

  it('an id in an index whose circuit is gone is skipped by reads', async () => {
    await raw.sadd(`${p}r:stale-router`, 'no-such-circuit');
    await raw.sadd(`${p}s:stale-session`, 'no-such-circuit');
    expect(await store.ofRouter('stale-router')).toEqual([]);
    expect(await store.ofSessions(['stale-session'])).toEqual(new Map());
    await raw.del(`${p}r:stale-router`, `${p}s:stale-session`);
  });

  it('a Redis that does not answer is reported as unavailable', async () => {
    const down = new RedisCircuitStore('redis://127.0.0.1:1', prefix);
    opened.push(down);
    await expect(down.get('x')).rejects.toMatchObject({
      code: 'SERVICE_UNAVAILABLE',
      cause: { message: 'the redis is not available, try again later' },
    });
  });
});
