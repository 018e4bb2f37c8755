import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { FleetRouter } from '@ziti/contracts';
import { FleetView } from './fleet.domain.ts';

const router = (id: string, connectedAt = '2026-01-01T00:00:00.000Z'): FleetRouter => ({
  id,
  version: 'v1.1.9',
  listeners: [],
  cost: 0,
  noTraversal: false,
  connectedAt,
});
const link = (id: string, src: string, dst: string) => ({
  id,
  srcRouterId: src,
  dstRouterId: dst,
  protocol: 'tls',
  dialAddress: 'tls:127.0.0.1:1',
  iteration: 1,
  srcLatencyMs: 65_000,
  dstLatencyMs: 65_000,
});

describe('FleetView', () => {
  it("a replica's full state replaces what it said before", () => {
    const f = new FleetView('me', 15_000);
    expect(f.state('r1', [router('A'), router('B')], [link('ab', 'A', 'B')])).toMatchObject({
      up: [
        { id: 'A', replicaId: 'r1' },
        { id: 'B', replicaId: 'r1' },
      ],
      down: [],
      linksGone: [],
    });
    // The same state again changes nothing but the links it restates.
    expect(f.state('r1', [router('A'), router('B')], [link('ab', 'A', 'B')])).toMatchObject({ up: [], down: [] });
    const next = f.state('r1', [router('A')], []);
    expect(next.down).toEqual(['B']);
    expect(next.linksGone).toEqual(['ab']);
    expect(f.list().map((r) => r.id)).toEqual(['A']);
  });

  it('a router that moved to another replica is not taken back by a late signal of the old one', () => {
    const f = new FleetView('me', 15_000);
    f.up('r1', router('B', '2026-01-01T00:00:00.000Z'));
    expect(f.up('r2', router('B', '2026-01-01T00:00:05.000Z'))).toBe(true);
    // r1's state sent before B left it arrives late: r2's newer connection holds.
    expect(f.up('r1', router('B', '2026-01-01T00:00:00.000Z'))).toBe(false);
    expect(f.router('B')?.replicaId).toBe('r2');
    // Nor does r1 saying B is down take it from r2.
    expect(f.down('r1', 'B')).toBe(false);
    expect(f.router('B')?.replicaId).toBe('r2');
    expect(f.state('r1', [], []).down).toEqual([]);
    expect(f.down('r2', 'B')).toBe(true);
    expect(f.router('B')).toBeUndefined();
  });

  it('a replica not heard of for a lease expires', () => {
    let now = 0;
    const f = new FleetView('me', 15_000, () => now);
    f.up('r1', router('A'));
    now = 10_000;
    f.up('r2', router('B'));
    expect(f.expired()).toEqual([]);
    now = 20_000;
    expect(f.expired()).toEqual(['r1']);
    expect(f.state('r1', [], []).down).toEqual(['A']);
    f.forget('r1');
    now = 26_000;
    expect(f.expired()).toEqual(['r2']);
  });

  it('a link claimed by another replica is that replica’s to drop', () => {
    const f = new FleetView('me', 15_000);
    f.state('r1', [], [link('ab', 'A', 'B')]);
    f.link('r2', 'ab');
    expect(f.state('r1', [], []).linksGone).toEqual([]);
    expect(f.state('r2', [], []).linksGone).toEqual(['ab']);
  });
});

describe('FleetView under interleaved signals', () => {
  /**
   * Each router connects to replicas in turn (each connection newer) or disconnects. A replica's
   * signals (routerUp / routerDown deltas, then its full state) reach the others in the order it sent
   * them (one publisher on core NATS), but the replicas' streams interleave in any way. Once all
   * arrived, every connected router must be held by the replica of its newest connection and no
   * other router known, as a from-scratch computation of the moves says.
   */
  it('ends where the moves say, however the replicas interleave', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 4 }), fc.integer({ min: 0, max: 2 }), fc.boolean()), {
          minLength: 1,
          maxLength: 30,
        }),
        fc.array(fc.integer({ min: 0, max: 2 }), { maxLength: 200 }),
        (moves, picks) => {
          const truth = new Map<string, string | null>();
          const held = new Map<string, Map<string, FleetRouter>>([0, 1, 2].map((i) => [`r${i}`, new Map()]));
          const streams = new Map<string, Array<(f: FleetView) => void>>([0, 1, 2].map((i) => [`r${i}`, []]));
          const send = (replica: string, signal: (f: FleetView) => void) => streams.get(replica)!.push(signal);
          const stateOf = (replica: string) => {
            const snapshot = [...held.get(replica)!.values()];
            send(replica, (f) => void f.state(replica, snapshot, []));
          };
          moves.forEach(([r, rep, connects], step) => {
            const id = `R${r}`;
            const replica = `r${rep}`;
            if (connects) {
              // A new connection of the router: its old replica sees its channel close.
              for (const [name, routers] of held)
                if (routers.delete(id)) {
                  send(name, (f) => void f.down(name, id));
                  stateOf(name);
                }
              const rt = router(id, `2026-01-01T00:00:${String(step).padStart(2, '0')}.000Z`);
              held.get(replica)!.set(id, rt);
              truth.set(id, replica);
              send(replica, (f) => void f.up(replica, rt));
            } else if (held.get(replica)!.delete(id)) {
              truth.set(id, null);
              send(replica, (f) => void f.down(replica, id));
            }
            stateOf(replica);
          });
          // Interleave the three streams, each in its own order.
          const f = new FleetView('me', 60_000);
          const next = new Map([...streams.keys()].map((k) => [k, 0]));
          const pending = () => [...streams].filter(([k, list]) => next.get(k)! < list.length).map(([k]) => k);
          let p = 0;
          for (let left = pending(); left.length > 0; left = pending()) {
            const replica = left[(picks[p++ % Math.max(1, picks.length)] ?? 0) % left.length]!;
            const i = next.get(replica)!;
            streams.get(replica)![i]!(f);
            next.set(replica, i + 1);
          }
          const expected = [...truth].flatMap(([id, r]) => (r ? [`${id}@${r}`] : [])).sort();
          expect(
            f
              .list()
              .map((r) => `${r.id}@${r.replicaId}`)
              .sort(),
          ).toEqual(expected);
        },
      ),
      { numRuns: 500 },
    );
  });
});
