import { describe, expect, it } from 'vitest';
import { routeInstructions } from '../circuits/circuits.domain.ts';
import { LinkGraph, type RouterNode, linkCosts, linkLimits } from './links.domain.ts';

const link = (id: string, destRouterId: string, iteration = 1) => ({
  id,
  destRouterId,
  protocol: 'tls',
  dialAddress: `tls:127.0.0.1:${id.length}`,
  iteration,
});

/** Every router connected at its own cost; `noTraversal` for the ones named. */
const nodes =
  (costs: Record<string, number>, noTraversal: string[] = []): RouterNode =>
  (id) =>
    id in costs ? { cost: costs[id]!, noTraversal: noTraversal.includes(id) } : undefined;

const hop = linkCosts.staticCost + 2 * linkCosts.initialLatencyMs;

describe('LinkGraph', () => {
  it('routes over the cheapest path, counting each next router at least minRouterCost', () => {
    const g = new LinkGraph();
    // A–B–C in a line, and a direct A–C through an expensive router D: A–D–C.
    g.reported('A', link('ab', 'B'));
    g.reported('B', link('bc', 'C'));
    g.reported('A', link('ad', 'D'));
    g.reported('D', link('dc', 'C'));
    const paths = g.pathsFrom('A', nodes({ A: 0, B: 0, C: 0, D: 500 }));
    expect(paths.cost('A')).toBe(0);
    expect(paths.path('A')).toEqual({ routers: ['A'], links: [], cost: 0 });
    expect(paths.cost('B')).toBe(hop + linkCosts.minRouterCost);
    const toC = paths.path('C')!;
    expect(toC.routers).toEqual(['A', 'B', 'C']);
    expect(toC.links.map((l) => l.id)).toEqual(['ab', 'bc']);
    expect(toC.cost).toBe(2 * (hop + linkCosts.minRouterCost));
    // The cheaper middle router wins whichever way the links were dialled.
    const back = g.pathsFrom('C', nodes({ A: 0, B: 600, C: 0, D: 0 }));
    expect(back.path('A')!.routers).toEqual(['C', 'D', 'A']);
  });

  it('never routes through a no-traversal router, but reaches it as an end', () => {
    const g = new LinkGraph();
    g.reported('A', link('ab', 'B'));
    g.reported('B', link('bc', 'C'));
    const paths = g.pathsFrom('A', nodes({ A: 0, B: 0, C: 0 }, ['B']));
    expect(paths.path('B')!.routers).toEqual(['A', 'B']);
    expect(paths.path('C')).toBeUndefined();
    expect(paths.cost('C')).toBeUndefined();
    // From a no-traversal source, paths leave it.
    expect(g.pathsFrom('B', nodes({ A: 0, B: 0, C: 0 }, ['B'])).path('C')!.routers).toEqual(['B', 'C']);
  });

  it('knows no path over a router that is not connected', () => {
    const g = new LinkGraph();
    g.reported('A', link('ab', 'B'));
    g.reported('B', link('bc', 'C'));
    expect(g.pathsFrom('A', nodes({ A: 0, C: 0 })).path('C')).toBeUndefined();
  });

  it('takes a newer iteration of a link in place of the old one and ignores a repeat', () => {
    const g = new LinkGraph();
    expect(g.reported('A', link('ab', 'B', 1))).toMatchObject({ link: { id: 'ab', iteration: 1 } });
    expect(g.reported('B', link('ab', 'A', 1))).toBeUndefined();
    const again = g.reported('A', link('ab', 'B', 2))!;
    expect(again.replaced).toMatchObject({ iteration: 1 });
    expect(g.size).toBe(1);
    // A fault of the older iteration leaves the newer link; one of its own iteration removes it.
    expect(g.faulted('ab', 1)).toBeUndefined();
    expect(g.get('ab')?.iteration).toBe(2);
    expect(g.faulted('ab', 2)?.id).toBe('ab');
    expect(g.size).toBe(0);
    expect(g.faulted('ab', 2)).toBeUndefined();
  });

  it('drops the links of a router that went, and only those', () => {
    const g = new LinkGraph();
    g.reported('A', link('ab', 'B'));
    g.reported('B', link('bc', 'C'));
    g.reported('C', link('cd', 'D'));
    expect(
      g
        .routerGone('B')
        .map((l) => l.id)
        .sort(),
    ).toEqual(['ab', 'bc']);
    expect(g.list().map((l) => l.id)).toEqual(['cd']);
    expect(g.ofRouter('A')).toEqual([]);
    expect(g.ofRouter('C').map((l) => l.id)).toEqual(['cd']);
  });
});

describe('routeInstructions', () => {
  const common = {
    circuitId: 'c1',
    attempt: 0,
    ingressId: 'in',
    egressId: 'out',
    timeoutMs: 1000,
    egress: { binding: 'edge', destination: 'term-addr', peerData: new Map<number, Uint8Array>() },
    tags: {},
  };

  it('one router forwards ingress to egress and dials the terminator', () => {
    const [only, ...rest] = routeInstructions({ routers: ['A'], links: [], cost: 0 }, common);
    expect(rest).toEqual([]);
    expect(only!.forwards).toEqual([
      { srcAddress: 'in', dstAddress: 'out', dstType: 'end' },
      { srcAddress: 'out', dstAddress: 'in', dstType: 'start' },
    ]);
    expect(only!.egress).toMatchObject({ binding: 'edge', address: 'out', destination: 'term-addr' });
  });

  it('over two links: ingress to the first link, link to link in the middle, the last link to egress', () => {
    const g = new LinkGraph();
    g.reported('A', link('ab', 'B'));
    g.reported('C', link('cb', 'B'));
    const path = g.pathsFrom('A', nodes({ A: 0, B: 0, C: 0 })).path('C')!;
    const [a, b, c] = routeInstructions(path, common);
    expect(a!.forwards).toEqual([
      { srcAddress: 'in', dstAddress: 'ab', dstType: 'link' },
      { srcAddress: 'ab', dstAddress: 'in', dstType: 'start' },
    ]);
    expect(a!.egress).toBeUndefined();
    expect(b!.forwards).toEqual([
      { srcAddress: 'ab', dstAddress: 'cb', dstType: 'link' },
      { srcAddress: 'cb', dstAddress: 'ab', dstType: 'link' },
    ]);
    expect(b!.egress).toBeUndefined();
    expect(c!.forwards).toEqual([
      { srcAddress: 'out', dstAddress: 'cb', dstType: 'link' },
      { srcAddress: 'cb', dstAddress: 'out', dstType: 'end' },
    ]);
    expect(c!.egress).toMatchObject({ address: 'out', destination: 'term-addr' });
  });
});

describe('LinkGraph bounds', () => {
  it('holds at most linkLimits.perRouter links a router reported; a known one still takes a newer iteration', () => {
    const g = new LinkGraph();
    for (let i = 0; i < linkLimits.perRouter; i++) expect(g.reported('A', link(`l${i}`, `R${i}`))).toBeDefined();
    expect(g.reported('A', link('one-more', 'Z'))).toBeUndefined();
    expect(g.size).toBe(linkLimits.perRouter);
    expect(g.reported('A', link('l0', 'R0', 2))?.replaced).toMatchObject({ iteration: 1 });
    // Another router's links are its own count.
    expect(g.reported('B', link('b1', 'C'))).toBeDefined();
  });
});
