import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { infra, uniqueName, waitFor } from '../../../test/support/infra.ts';
import {
  type ApiSessionRecord,
  type ApiSessionStore,
  type EndedApiSession,
  MemoryApiSessionStore,
  RedisApiSessionStore,
} from '../src/index.ts';

/**
 * The API-session store contract, run on the real Redis (a key prefix of its own) and on the
 * memory store of `npm start`: the gateway's one-round-trip check with its positions, their
 * max-merge, and how sessions end (tombstones, expiry, leased claims) so that every end can be
 * announced.
 */
const graceMs = 400;
const prefixes: string[] = [];
const opened: ApiSessionStore[] = [];

const targets: Record<string, () => { store: () => ApiSessionStore; prefix?: string }> = {
  redis: () => {
    const prefix = `${uniqueName('zt')}:`;
    prefixes.push(prefix);
    return {
      prefix,
      // Every call is another client on the same keys: another replica.
      store: () => remember(new RedisApiSessionStore(infra.redisUrl, prefix, { endGraceMs: graceMs })),
    };
  },
  memory: () => {
    const store = remember(new MemoryApiSessionStore(Date.now, { endGraceMs: graceMs }));
    return { store: () => store };
  },
};

function remember<T extends ApiSessionStore>(store: T): T {
  opened.push(store);
  return store;
}

afterAll(async () => {
  for (const s of opened) await s.close();
  const redis = new Redis(infra.redisUrl);
  for (const prefix of prefixes) {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) await redis.del(...keys);
    } while (cursor !== '0');
  }
  await redis.quit();
});

let n = 0;
function record(identityId = 'identity-1', o: Partial<ApiSessionRecord> = {}): ApiSessionRecord {
  const now = new Date().toISOString();
  return {
    id: `session-${++n}-${randomUUID().slice(0, 8)}`,
    token: randomUUID(),
    identityId,
    identityName: 'someone',
    isAdmin: false,
    authenticatorId: 'authenticator-1',
    authMethod: 'password',
    ipAddress: '127.0.0.1',
    configTypes: [],
    isMfaRequired: false,
    isMfaComplete: false,
    tags: {},
    createdAt: now,
    updatedAt: now,
    ...o,
  };
}

const ids = (ended: EndedApiSession[]) => ended.map((e) => e.record.id).sort();

for (const [name, target] of Object.entries(targets)) {
  describe(`API session store on ${name}`, () => {
    const t = target();
    const store = t.store();

    it('touch answers the record and the recorded positions in one call', async () => {
      const r = record();
      await store.create(r, 60);
      const touched = await store.touch(r.token, 60);
      expect(touched).toMatchObject({ id: r.id, identityId: r.identityId, configTypes: [], positions: {} });
      expect(Date.parse(touched!.expiresAt) - Date.parse(touched!.lastActivityAt)).toBe(60_000);
      await store.recordPositions(r.id, { auth: 12, inventory: 3 }, 60);
      expect((await store.touch(r.token, 60))!.positions).toEqual({ auth: 12, inventory: 3 });
      expect(await store.touch(randomUUID(), 60)).toBeNull();
    });

    it('recordPositions keeps the greatest position per source', async () => {
      const r = record();
      await store.create(r, 60);
      await store.recordPositions(r.id, { auth: 10 }, 60);
      await store.recordPositions(r.id, { auth: 7, policy: 2 }, 60);
      await store.recordPositions(r.id, { auth: 11 }, 60);
      await store.recordPositions(r.id, {}, 60);
      expect((await store.touch(r.token, 60))!.positions).toEqual({ auth: 11, policy: 2 });
      await expect(store.recordPositions(r.id, { auth: 1.5 }, 60)).rejects.toThrow(/integer/);
    });

    it('concurrent recordPositions end at the maximum of every source', async () => {
      const r = record();
      await store.create(r, 60);
      const stores = [store, t.store(), t.store()];
      const values = Array.from({ length: 300 }, (_, i) => ((i * 7919) % 1000) + 1);
      await Promise.all(
        values.map((v, i) =>
          stores[i % stores.length]!.recordPositions(r.id, { auth: v, inventory: 2_000_000_000_000 - v }, 60),
        ),
      );
      expect((await store.touch(r.token, 60))!.positions).toEqual({
        auth: Math.max(...values),
        inventory: 2_000_000_000_000 - Math.min(...values),
      });
    });

    it('delete and deleteByIdentity remove the positions with the session', async () => {
      const a = record('identity-del');
      const b = record('identity-del');
      for (const r of [a, b]) {
        await store.create(r, 60);
        await store.recordPositions(r.id, { auth: 5 }, 60);
      }
      expect(await store.delete(a.id)).toBe(true);
      expect(await store.delete(a.id)).toBe(false);
      expect(await store.deleteByIdentity('identity-del')).toEqual([b.id]);
      // The same ids again start without positions.
      for (const r of [a, b]) {
        await store.create({ ...r, token: randomUUID() }, 60);
        expect(await store.listIdsByIdentity('identity-del')).toContain(r.id);
      }
      const again = await store.getById(a.id, 60);
      expect((await store.touch(again!.token, 60))!.positions).toEqual({});
      await store.deleteByIdentity('identity-del');
      expect(
        await store.claimEnded(100, 60_000).then((c) => c.filter((e) => e.record.identityId === 'identity-del')),
      ).toEqual([]);
    });

    it('identitiesWithSessions answers the identities with a live session, not ended ones', async () => {
      const live = record('identity-with-a');
      const ended = record('identity-with-b');
      await store.create(live, 60);
      await store.create(ended, 60);
      await store.end(ended.id, 'logout');
      expect(
        [...(await store.identitiesWithSessions(['identity-with-a', 'identity-with-b', 'identity-with-c']))].sort(),
      ).toEqual(['identity-with-a']);
      expect(await store.identitiesWithSessions([])).toEqual(new Set());
      await store.delete(live.id);
      await store.forget([ended.id]);
      expect(await store.identitiesWithSessions(['identity-with-a'])).toEqual(new Set());
    });

    it('update rewrites the record, also what an ended session is announced with', async () => {
      const r = record('identity-upd');
      await store.create(r, 60);
      await store.update(r.id, { isMfaComplete: true, configTypes: ['all'] }, 60);
      expect(await store.touch(r.token, 60)).toMatchObject({ isMfaComplete: true, configTypes: ['all'] });
      const ended = await store.end(r.id, 'logout');
      expect(ended).toMatchObject({ id: r.id, isMfaComplete: true, configTypes: ['all'] });
      await store.update(r.id, { isAdmin: true }, 60);
      expect(await store.getById(r.id, 60)).toBeNull();
      await store.forget([r.id]);
    });

    it('end stops the token at once and leaves a tombstone that forget drops', async () => {
      const r = record('identity-end');
      await store.create(r, 60);
      await store.recordPositions(r.id, { auth: 1 }, 60);
      expect(await store.end(r.id, 'logout')).toMatchObject({ id: r.id, token: r.token });
      expect(await store.end(r.id, 'logout')).toBeNull();
      expect(await store.touch(r.token, 60)).toBeNull();
      expect(await store.getById(r.id, 60)).toBeNull();
      expect(await store.listIdsByIdentity('identity-end')).toEqual([]);
      expect((await store.listAll(60)).map((s) => s.id)).not.toContain(r.id);
      // Within its grace nobody claims it; forgotten, nobody ever will.
      expect(ids(await store.claimEnded(100, 60_000))).not.toContain(r.id);
      await store.forget([r.id]);
      await new Promise((resolve) => setTimeout(resolve, graceMs + 100));
      expect(ids(await store.claimEnded(100, 60_000))).not.toContain(r.id);
    });

    it('a tombstone nobody forgot is claimed after its grace, with its reason', async () => {
      const r = record('identity-tomb');
      await store.create(r, 60);
      const before = Date.now();
      await store.end(r.id, 'admin');
      const claimed = await waitFor(async () => {
        const c = (await store.claimEnded(100, 60_000)).filter((e) => e.record.id === r.id);
        return c.length > 0 ? c : null;
      }, 'the tombstone to be claimed');
      expect(claimed).toHaveLength(1);
      expect(claimed[0]!.reason).toBe('admin');
      expect(claimed[0]!.record).toMatchObject({ id: r.id, identityId: 'identity-tomb' });
      expect(Math.abs(Date.parse(claimed[0]!.endedAt) - before)).toBeLessThan(5_000);
      // Leased: not claimed again until the lease lapses.
      expect(ids(await store.claimEnded(100, 60_000))).not.toContain(r.id);
      await store.forget([r.id]);
    });

    it('endByIdentity ends live sessions and answers earlier ones of the same reason until forgotten', async () => {
      const a = record('identity-many');
      const b = record('identity-many');
      const other = record('identity-other');
      for (const r of [a, b, other]) await store.create(r, 60);
      expect((await store.endByIdentity('identity-many', 'identityDisabled')).map((r) => r.id).sort()).toEqual(
        [a.id, b.id].sort(),
      );
      expect(await store.touch(a.token, 60)).toBeNull();
      expect(await store.touch(other.token, 60)).not.toBeNull();
      // A retry of the same operation sees them again; another operation does not.
      expect((await store.endByIdentity('identity-many', 'identityDisabled')).length).toBe(2);
      expect(await store.endByIdentity('identity-many', 'identityDeleted')).toEqual([]);
      await store.forget([a.id, b.id]);
      expect(await store.endByIdentity('identity-many', 'identityDisabled')).toEqual([]);
    });

    it('endByIdentity with an authenticator ends only the sessions made with it, and answers them again until forgotten', async () => {
      const byPassword = record('identity-two-factors', { authenticatorId: 'updb-1' });
      const byPasswordToo = record('identity-two-factors', { authenticatorId: 'updb-1' });
      const byCert = record('identity-two-factors', { authenticatorId: 'cert-1', authMethod: 'cert' });
      const sameAuthenticatorOtherIdentity = record('identity-stranger', { authenticatorId: 'updb-1' });
      for (const r of [byPassword, byPasswordToo, byCert, sameAuthenticatorOtherIdentity]) await store.create(r, 60);
      const ended = await store.endByIdentity('identity-two-factors', 'authenticatorDeleted', 'updb-1');
      expect(ended.map((r) => r.id).sort()).toEqual([byPassword.id, byPasswordToo.id].sort());
      expect(await store.touch(byPassword.token, 60)).toBeNull();
      expect(await store.touch(byPasswordToo.token, 60)).toBeNull();
      expect(await store.touch(byCert.token, 60)).not.toBeNull();
      expect(await store.touch(sameAuthenticatorOtherIdentity.token, 60)).not.toBeNull();
      expect(await store.listIdsByIdentity('identity-two-factors')).toEqual([byCert.id]);
      // A retry answers the same ones; the cert session is still not touched.
      const again = await store.endByIdentity('identity-two-factors', 'authenticatorDeleted', 'updb-1');
      expect(again.map((r) => r.id).sort()).toEqual([byPassword.id, byPasswordToo.id].sort());
      expect(await store.endByIdentity('identity-two-factors', 'authenticatorDeleted', 'cert-2')).toEqual([]);
      expect(await store.touch(byCert.token, 60)).not.toBeNull();
      await store.forget(ended.map((r) => r.id));
      expect(await store.endByIdentity('identity-two-factors', 'authenticatorDeleted', 'updb-1')).toEqual([]);
      // Without an authenticator, every session of the identity, the cert one included.
      expect((await store.endByIdentity('identity-two-factors', 'identityDeleted')).map((r) => r.id)).toEqual([
        byCert.id,
      ]);
    });

    it('scanLive walks every live session a page at a time, and leaves the ended ones out', async () => {
      const mine = Array.from({ length: 37 }, () => record(`identity-scan-${randomUUID().slice(0, 6)}`));
      for (const r of mine) await store.create(r, 60);
      const ended = mine.slice(0, 5);
      for (const r of ended) await store.end(r.id, 'logout');
      const seen = new Set<string>();
      let cursor: string | undefined;
      for (let pages = 0; pages < 10_000; pages++) {
        const page = await store.scanLive(cursor, 7);
        for (const r of page.records) seen.add(r.id);
        if (page.cursor === null) break;
        cursor = page.cursor;
      }
      for (const r of mine.slice(5)) expect(seen.has(r.id)).toBe(true);
      for (const r of ended) expect(seen.has(r.id)).toBe(false);
    });

    it('an expired session is claimed with its expiry time; a touched one is not; a lapsed lease is claimed again', async () => {
      const expiring = record('identity-exp');
      const kept = record('identity-exp');
      const created = Date.now();
      await store.create(expiring, 1);
      await store.create(kept, 1);
      const keepAlive = setInterval(() => void store.touch(kept.token, 1), 200);
      let endedAt = '';
      try {
        const claimed = await waitFor(async () => {
          const c = (await store.claimEnded(100, 500)).filter((e) => e.record.identityId === 'identity-exp');
          return c.length > 0 ? c : null;
        }, 'the expired session to be claimed');
        expect(ids(claimed)).toEqual([expiring.id]);
        expect(claimed[0]!.reason).toBeNull();
        endedAt = claimed[0]!.endedAt;
        expect(Math.abs(Date.parse(endedAt) - (created + 1000))).toBeLessThan(1000);
        expect(await store.touch(expiring.token, 60)).toBeNull();
        expect(await store.touch(kept.token, 1)).not.toBeNull();
        // Leased: nobody else gets it meanwhile.
        expect(ids(await store.claimEnded(100, 500))).not.toContain(expiring.id);
      } finally {
        clearInterval(keepAlive);
      }
      await store.delete(kept.id);
      // A claim never forgotten (the sweeper died before `forget`) comes back once its lease lapses.
      const again = await waitFor(async () => {
        const c = (await store.claimEnded(100, 60_000)).filter((e) => e.record.id === expiring.id);
        return c.length > 0 ? c : null;
      }, 'the lapsed lease to be claimed again');
      expect(again[0]!.reason).toBeNull();
      expect(again[0]!.endedAt).toBe(endedAt);
      await store.forget([expiring.id]);
    });

    it('replicas racing for expired sessions claim each exactly once', async () => {
      const sessions = Array.from({ length: 40 }, () => record('identity-race'));
      for (const r of sessions) await store.create(r, 1);
      const replicas = [t.store(), t.store(), t.store()];
      const seen: string[] = [];
      await waitFor(
        async () => {
          const rounds = await Promise.all(replicas.map((s) => s.claimEnded(7, 60_000)));
          for (const c of rounds)
            seen.push(...c.filter((e) => e.record.identityId === 'identity-race').map((e) => e.record.id));
          return seen.length >= sessions.length;
        },
        'every expired session to be claimed',
        10_000,
      );
      expect(seen.sort()).toEqual(sessions.map((r) => r.id).sort());
      await store.forget(seen);
    });
  });
}

describe('Redis key layout', () => {
  const prefix = `${uniqueName('zt')}:`;
  prefixes.push(prefix);
  const store = remember(new RedisApiSessionStore(infra.redisUrl, prefix));
  const redis = new Redis(infra.redisUrl);
  afterAll(() => redis.quit());

  it('positions expire with the session and slide with it', async () => {
    const r = record();
    await store.create(r, 100);
    await store.recordPositions(r.id, { auth: 1 }, 30);
    const pos = `${prefix}as:pos:${r.id}`;
    expect(await redis.ttl(pos)).toBeGreaterThan(25);
    expect(await redis.ttl(pos)).toBeLessThanOrEqual(30);
    await store.touch(r.token, 100);
    expect(await redis.ttl(pos)).toBeGreaterThan(95);
    expect(await redis.ttl(`${prefix}as:id:${r.id}`)).toBeGreaterThan(95);
    const due = Number(await redis.zscore(`${prefix}as:exp`, r.id));
    expect(Math.abs(due - (Date.now() + 100_000))).toBeLessThan(2_000);
    expect(await redis.hget(`${prefix}as:rec:${r.id}`, 'r')).toBe(JSON.stringify(r));
  });

  it('delete leaves no key behind', async () => {
    const r = record('identity-layout');
    await store.create(r, 100);
    await store.recordPositions(r.id, { auth: 1 }, 100);
    await store.delete(r.id);
    const keys = await redis.keys(`${prefix}as:*${r.id}*`);
    expect(keys).toEqual([]);
    expect(await redis.zscore(`${prefix}as:exp`, r.id)).toBeNull();
    expect(await redis.sismember(`${prefix}as:ident:identity-layout`, r.id)).toBe(0);
  });

  it('end keeps only the tombstone, forget drops it', async () => {
    const r = record('identity-layout');
    await store.create(r, 100);
    await store.recordPositions(r.id, { auth: 1 }, 100);
    await store.end(r.id, 'logout');
    expect((await redis.keys(`${prefix}as:*${r.id}*`)).sort()).toEqual([`${prefix}as:rec:${r.id}`]);
    expect(await redis.exists(`${prefix}as:tok:${r.token}`)).toBe(0);
    expect(await redis.hmget(`${prefix}as:rec:${r.id}`, 'end')).toEqual(['logout']);
    expect(Number(await redis.zscore(`${prefix}as:exp`, r.id))).toBeGreaterThan(Date.now());
    await store.forget([r.id]);
    expect(await redis.keys(`${prefix}as:*${r.id}*`)).toEqual([]);
    expect(await redis.zscore(`${prefix}as:exp`, r.id)).toBeNull();
    expect(await redis.sismember(`${prefix}as:ident:identity-layout`, r.id)).toBe(0);
  });

  it('forget leaves a live session alone', async () => {
    const r = record('identity-layout');
    await store.create(r, 100);
    await store.forget([r.id]);
    expect(await store.touch(r.token, 100)).not.toBeNull();
    expect(await redis.zscore(`${prefix}as:exp`, r.id)).not.toBeNull();
    await store.delete(r.id);
  });
});
