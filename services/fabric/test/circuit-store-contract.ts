import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { CircuitRecord, CircuitStore } from '../src/circuits/circuits.ports.ts';

/**
 * The `CircuitStore` contract, run on every store: what goes in comes out, the indexes by router
 * and by session follow adds and removes, and of callers racing to remove a circuit exactly one
 * gets it (a fault reported to two replicas at once unroutes once).
 */
export interface CircuitStoreTarget {
  /** The store under test. */
  store: CircuitStore;
  /** Another caller on the same circuits (another replica); the same store where there is only one. */
  another(): CircuitStore;
  /** After a test removed everything it added: nothing of the store may be left behind. */
  leftovers?(): Promise<string[]>;
}

let n = 0;
/** A circuit with ids of its own (every test uses fresh routers and sessions, so tests never meet). */
export function circuit(o: Partial<CircuitRecord> = {}): CircuitRecord {
  const id = `c-${++n}-${randomUUID().slice(0, 8)}`;
  return {
    id,
    sessionId: `session-${id}`,
    apiSessionId: `api-session-${id}`,
    identityId: 'identity-1',
    serviceId: 'service-1',
    terminatorId: `terminator-${id}`,
    path: [`router-${id}`],
    ingressId: `in-${id}`,
    egressId: `out-${id}`,
    replicaId: 'replica-1',
    createdAt: new Date().toISOString(),
    ...o,
  };
}

const byId = (a: CircuitRecord, b: CircuitRecord) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
const sorted = (cs: CircuitRecord[]) => [...cs].sort(byId);
const unique = (what: string) => `${what}-${randomUUID().slice(0, 8)}`;

export function circuitStoreContract(name: string, target: () => CircuitStoreTarget): void {
  describe(`CircuitStore contract on ${name}`, () => {
    const t = target();
    const store = t.store;

    it('add then get answers the circuit as it was added; get of an unknown id is null', async () => {
      const c = circuit({ path: ['r-a', 'r-b'], createdAt: '2024-05-06T07:08:09.123Z' });
      await store.add(c);
      expect(await store.get(c.id)).toEqual(c);
      expect(await t.another().get(c.id)).toEqual(c);
      expect(await store.get(unique('nope'))).toBeNull();
      await store.remove(c.id);
    });

    it('what get answers is a copy: changing it changes nothing stored, nor does changing what was added', async () => {
      const c = circuit();
      const original = structuredClone(c);
      await store.add(c);
      c.path.push('mutated-after-add');
      const got = (await store.get(c.id))!;
      got.path.push('mutated-after-get');
      got.serviceId = 'changed';
      expect(await store.get(c.id)).toEqual(original);
      await store.remove(c.id);
    });

    it('remove answers the circuit once, then null; get and the indexes no longer have it', async () => {
      const router = unique('router');
      const session = unique('session');
      const c = circuit({ sessionId: session, path: [router, unique('other-router')] });
      await store.add(c);
      const removed = await store.remove(c.id);
      expect(removed).toEqual(c);
      expect(await store.remove(c.id)).toBeNull();
      expect(await store.get(c.id)).toBeNull();
      expect(await store.ofRouter(router)).toEqual([]);
      expect(await store.ofSessions([session])).toEqual(new Map());
      expect(await store.remove(unique('never-there'))).toBeNull();
    });

    it('ofRouter answers every circuit whose path crosses the router, each once', async () => {
      const [r1, r2, r3] = [unique('r1'), unique('r2'), unique('r3')];
      const a = circuit({ path: [r1] });
      const b = circuit({ path: [r1, r2] });
      const c = circuit({ path: [r2, r3, r2] }); // a router twice on a path
      const d = circuit({ path: [] });
      for (const x of [a, b, c, d]) await store.add(x);
      expect(sorted(await store.ofRouter(r1))).toEqual(sorted([a, b]));
      expect(sorted(await store.ofRouter(r2))).toEqual(sorted([b, c]));
      expect(await store.ofRouter(r3)).toEqual([c]);
      expect(await store.ofRouter(unique('r-none'))).toEqual([]);
      for (const x of [a, b, c, d]) expect(await store.remove(x.id)).toEqual(x);
      for (const r of [r1, r2, r3]) expect(await store.ofRouter(r)).toEqual([]);
    });

    it('ofSessions maps each session asked for to its live circuits, leaving out sessions without any', async () => {
      const [s1, s2, s3] = [unique('s1'), unique('s2'), unique('s3')];
      const a = circuit({ sessionId: s1 });
      const b = circuit({ sessionId: s1 });
      const c = circuit({ sessionId: s2 });
      for (const x of [a, b, c]) await store.add(x);
      const found = await store.ofSessions([s1, s2, s3, s1]);
      expect([...found.keys()].sort()).toEqual([s1, s2].sort());
      expect(sorted(found.get(s1)!)).toEqual(sorted([a, b]));
      expect(found.get(s2)).toEqual([c]);
      expect(await store.ofSessions([])).toEqual(new Map());
      await store.remove(a.id);
      expect(await t.another().ofSessions([s1])).toEqual(new Map([[s1, [b]]]));
      await store.remove(b.id);
      await store.remove(c.id);
      expect(await store.ofSessions([s1, s2])).toEqual(new Map());
    });

    it('count follows adds and removes', async () => {
      const before = await store.count();
      const cs = Array.from({ length: 5 }, () => circuit());
      for (const c of cs) await store.add(c);
      expect(await store.count()).toBe(before + 5);
      await store.remove(cs[0]!.id);
      await store.remove(cs[0]!.id);
      expect(await store.count()).toBe(before + 4);
      for (const c of cs.slice(1)) await store.remove(c.id);
      expect(await store.count()).toBe(before);
    });

    it('of two callers racing to remove a circuit, exactly one gets it', async () => {
      const router = unique('router');
      const session = unique('session');
      const cs = Array.from({ length: 40 }, () => circuit({ sessionId: session, path: [router] }));
      for (const c of cs) await store.add(c);
      const callers = [store, t.another(), t.another()];
      const results = await Promise.all(
        cs.flatMap((c) => callers.map((caller, i) => caller.remove(c.id).then((r) => ({ id: c.id, i, r })))),
      );
      for (const c of cs) {
        const got = results.filter((x) => x.id === c.id && x.r !== null);
        expect(got).toHaveLength(1);
        expect(got[0]!.r).toEqual(c);
      }
      expect(await store.ofRouter(router)).toEqual([]);
      expect(await store.ofSessions([session])).toEqual(new Map());
      for (const c of cs) expect(await store.get(c.id)).toBeNull();
    });

    it('removals racing adds and reads leave the indexes agreeing with the circuits', async () => {
      const routers = [unique('ra'), unique('rb'), unique('rc')];
      const sessions = [unique('sa'), unique('sb')];
      const cs = Array.from({ length: 30 }, (_, i) =>
        circuit({ sessionId: sessions[i % 2]!, path: [routers[i % 3]!, routers[(i + 1) % 3]!] }),
      );
      await Promise.all(cs.map((c) => store.add(c)));
      const gone = cs.filter((_, i) => i % 3 !== 0);
      const kept = cs.filter((_, i) => i % 3 === 0);
      await Promise.all([
        ...gone.map((c) => t.another().remove(c.id)),
        ...routers.map((r) => store.ofRouter(r)),
        store.ofSessions(sessions),
      ]);
      for (const r of routers) {
        expect(sorted(await store.ofRouter(r))).toEqual(sorted(kept.filter((c) => c.path.includes(r))));
      }
      const bySession = await store.ofSessions(sessions);
      for (const s of sessions) {
        expect(sorted(bySession.get(s) ?? [])).toEqual(sorted(kept.filter((c) => c.sessionId === s)));
      }
      for (const c of kept) await store.remove(c.id);
      if (t.leftovers) expect(await t.leftovers()).toEqual([]);
    });

    it('keeps nothing of a circuit once it is removed', async () => {
      const c = circuit({ path: [unique('r'), unique('r')] });
      await store.add(c);
      await store.remove(c.id);
      if (t.leftovers) expect(await t.leftovers()).toEqual([]);
      expect(await store.get(c.id)).toBeNull();
    });
  });
}
