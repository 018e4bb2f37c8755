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
