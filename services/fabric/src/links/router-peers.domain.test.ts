import { describe, expect, it } from 'vitest';
import { createLogger } from '@ziti/platform/logger';
import { type AdmittableRouter, type FleetSignal, fleetRouterSchema } from '@ziti/contracts';
import type { ConnectedPeer, HeldLinks, PeerChange, RouterLink } from '../routers/router-link.ports.ts';
import { FleetView } from './fleet.domain.ts';
import { type Link, LinkGraph } from './links.domain.ts';
import { RouterPeers, fleetRouterOf } from './router-peers.domain.ts';

/** A control channel that records what the router is told. */
function fakeLink(routerId: string) {
  const told: PeerChange[][] = [];
  const faults: { linkId: string; iteration: number }[] = [];
  const link = {
    routerId,
    connectedAt: new Date('2026-01-01T00:00:00Z'),
    peerStates: (changes: PeerChange[]) => told.push(changes),
    linkFaulted: (linkId: string, iteration: number) => faults.push({ linkId, iteration }),
  } as unknown as RouterLink;
  return { link, told, faults };
}

const listener = (port: number) => ({
  address: `tls:127.0.0.1:${port}`,
  protocol: 'tls',
  costTags: [],
  groups: ['default'],
  localBinding: '',
});

function setup(routers: Record<string, Partial<AdmittableRouter>> = {}) {
  const graph = new LinkGraph();
  const gone: Link[][] = [];
  const links = new Map<string, ReturnType<typeof fakeLink>>();
  const registered = new Map<string, ConnectedPeer>();
  const held: HeldLinks = {
    of: (id) => links.get(id)?.link,
    local: (id) => links.get(id)?.link,
    peers: () => [...registered.values()],
    edge: () => [],
    node: () => undefined,
  };
  const signals: FleetSignal[] = [];
  const fleet = new FleetView('replica-1', 15_000);
  const peers = new RouterPeers(
    graph,
    { linksGone: async (l) => void gone.push(l) },
    {
      admission: async (id) => (id in routers ? ({ id, fingerprint: null, ...routers[id] } as AdmittableRouter) : null),
    },
    held,
    fleet,
    { send: (signal) => signals.push(signal) },
    createLogger('test', 'silent'),
  );
  const peer = (id: string, port: number): ConnectedPeer => {
    const l = fakeLink(id);
    links.set(id, l);
    const p: ConnectedPeer = {
      id,
      link: l.link,
      version: 'v1.1.9',
      listeners: [listener(port)],
      cost: 0,
      noTraversal: false,
    };
    registered.set(id, p);
    return p;
  };
  return { graph, gone, links, peers, peer, signals, fleet };
}

describe('RouterPeers', () => {
  it('a router that comes learns of the others, and they of it, with their listeners', () => {
    const { peers, peer, links } = setup();
    const a = peer('A', 1);
    const b = peer('B', 2);
    peers.connected(a, []);
    expect(links.get('A')!.told).toEqual([]);
    peers.connected(b, [a]);
    expect(links.get('A')!.told).toEqual([
      [{ id: 'B', state: 'healthy', version: 'v1.1.9', listeners: [listener(2)] }],
    ]);
    expect(links.get('B')!.told).toEqual([
      [{ id: 'A', state: 'healthy', version: 'v1.1.9', listeners: [listener(1)] }],
    ]);
  });

  it('a router that goes is unhealthy to the others (removed when deleted), and its links go with their circuits', async () => {
    const { peers, peer, links, graph, gone } = setup();
    const a = peer('A', 1);
    peer('B', 2);
    const c = peer('C', 3);
    peers.reported(a.link, [{ id: 'ab', destRouterId: 'B', protocol: 'tls', dialAddress: 'x', iteration: 1 }]);
    peers.reported(c.link, [{ id: 'cb', destRouterId: 'B', protocol: 'tls', dialAddress: 'y', iteration: 1 }]);
    expect(graph.size).toBe(2);
    peers.disconnected('B', false, [a, c]);
    expect(links.get('A')!.told.at(-1)).toEqual([{ id: 'B', state: 'unhealthy' }]);
    expect(links.get('C')!.told.at(-1)).toEqual([{ id: 'B', state: 'unhealthy' }]);
    expect(graph.size).toBe(0);
    await Promise.resolve();
    expect(
      gone
        .flat()
        .map((l) => l.id)
        .sort(),
    ).toEqual(['ab', 'cb']);
    peers.disconnected('C', true, [a]);
    expect(links.get('A')!.told.at(-1)).toEqual([{ id: 'C', state: 'removed' }]);
  });

  it('a link fault removes the link, tells its other end and fails its circuits; an older iteration is ignored', async () => {
    const { peers, peer, links, graph, gone } = setup();
    const a = peer('A', 1);
    const b = peer('B', 2);
    peers.reported(a.link, [{ id: 'ab', destRouterId: 'B', protocol: 'tls', dialAddress: 'x', iteration: 2 }]);
    peers.faulted(b.link, 'ab', 1);
    expect(graph.size).toBe(1);
    expect(links.get('A')!.faults).toEqual([]);
    peers.faulted(b.link, 'ab', 2);
    expect(graph.size).toBe(0);
    expect(links.get('A')!.faults).toEqual([{ linkId: 'ab', iteration: 2 }]);
    expect(links.get('B')!.faults).toEqual([]);
    await Promise.resolve();
    expect(gone.flat().map((l) => l.id)).toEqual(['ab']);
  });

  it('a reported link to itself, to no router or with oversized fields is not taken', () => {
    const { peers, peer, graph } = setup();
    const a = peer('A', 1);
    peers.reported(a.link, [
      { id: 'aa', destRouterId: 'A', protocol: 'tls', dialAddress: 'x', iteration: 1 },
      { id: 'a-', destRouterId: '', protocol: 'tls', dialAddress: 'x', iteration: 1 },
      { id: '', destRouterId: 'B', protocol: 'tls', dialAddress: 'x', iteration: 1 },
      { id: 'x'.repeat(257), destRouterId: 'B', protocol: 'tls', dialAddress: 'x', iteration: 1 },
      { id: 'ab', destRouterId: 'B', protocol: 'tls', dialAddress: 'x'.repeat(1025), iteration: 1 },
    ]);
    expect(graph.size).toBe(0);
  });

  it('verifies a link peer by the fingerprint its router enrolled with', async () => {
    const { peers } = setup({ B: { fingerprint: 'ab12cd' }, N: { fingerprint: null } });
    expect(await peers.verify('B', ['ffff', 'AB12CD'])).toEqual({ verified: true });
    expect(await peers.verify('B', ['ffff'])).toEqual({
      verified: false,
      reason: 'could not verify fingerprint for router B',
    });
    expect(await peers.verify('N', ['ab12cd'])).toEqual({
      verified: false,
      reason: 'invalid router N, not yet enrolled',
    });
    expect(await peers.verify('X', ['ab12cd'])).toEqual({ verified: false, reason: 'router with id X not found' });
    // An id no router can have is not looked up, nor echoed back.
    expect(await peers.verify('B'.repeat(257), ['ab12cd'])).toEqual({ verified: false, reason: 'invalid router id' });
  });

  it("another replica's routers: told to the routers held here, dropped with their links when it says they went", async () => {
    const { peers, peer, links, graph, gone, signals } = setup();
    const remoteB = {
      id: 'B',
      version: 'v1.1.9',
      listeners: [listener(2)],
      cost: 0,
      noTraversal: false,
      connectedAt: 'x',
    };
    peers.signalled({ kind: 'routerUp', replicaId: 'replica-2', router: remoteB });
    // Nothing held here yet: no one to tell. A comes and hears of B.
    const a = peer('A', 1);
    peers.connected(a, []);
    expect(links.get('A')!.told).toEqual([
      [{ id: 'B', state: 'healthy', version: 'v1.1.9', listeners: [listener(2)] }],
    ]);
    expect(signals.at(-1)).toMatchObject({ kind: 'routerUp', replicaId: 'replica-1', router: { id: 'A' } });
    // B's link to C, reported on the other replica, is in the graph here.
    peers.signalled({
      kind: 'link',
      replicaId: 'replica-2',
      link: {
        id: 'bc',
        srcRouterId: 'B',
        dstRouterId: 'C',
        protocol: 'tls',
        dialAddress: 'y',
        iteration: 1,
        srcLatencyMs: 3,
        dstLatencyMs: 65_000,
      },
    });
    // With the latency B measured there.
    expect(graph.get('bc')).toMatchObject({ srcRouterId: 'B', dstRouterId: 'C', cost: 1 + 3 + 65_000 });
    // Our own signals come back to us: ignored.
    peers.signalled({ kind: 'routerDown', replicaId: 'replica-1', routerId: 'B', removed: false });
    expect(graph.size).toBe(1);
    peers.signalled({ kind: 'routerDown', replicaId: 'replica-2', routerId: 'B', removed: false });
    expect(graph.size).toBe(0);
    await Promise.resolve();
    expect(gone.flat().map((l) => l.id)).toEqual(['bc']);
    expect(links.get('A')!.told.at(-1)).toEqual([{ id: 'B', state: 'unhealthy' }]);
  });

  it('says what it holds when another replica says hello', () => {
    const { peers, peer, signals, graph } = setup();
    const a = peer('A', 1);
    peers.reported(a.link, [{ id: 'ab', destRouterId: 'B', protocol: 'tls', dialAddress: 'x', iteration: 1 }]);
    expect(graph.size).toBe(1);
    expect(signals.at(-1)).toMatchObject({ kind: 'link', link: { id: 'ab', srcRouterId: 'A' } });
    peers.signalled({ kind: 'hello', replicaId: 'replica-2' });
    expect(signals.at(-1)).toMatchObject({
      kind: 'state',
      replicaId: 'replica-1',
      routers: [{ id: 'A', version: 'v1.1.9', connectedAt: '2026-01-01T00:00:00.000Z' }],
      links: [{ id: 'ab', srcRouterId: 'A', dstRouterId: 'B', iteration: 1 }],
    });
  });

  it("a router's metrics set its end's latency of each of its links, and the others hear of the cost", () => {
    const { peers, peer, graph, signals } = setup();
    const a = peer('A', 1);
    peers.reported(a.link, [{ id: 'ab', destRouterId: 'B', protocol: 'tls', dialAddress: 'x', iteration: 1 }]);
    expect(graph.get('ab')!.cost).toBe(1 + 65_000 + 65_000);
    peers.measured(
      a.link,
      new Map([
        ['link.ab.latency', { mean: 2_500_000 }],
        ['link.ab.queue_time', { mean: 500_000 }],
        ['link.other.latency', { mean: 1 }],
      ]),
    );
    expect(graph.get('ab')).toMatchObject({ srcLatencyMs: 3, dstLatencyMs: 65_000, cost: 1 + 3 + 65_000 });
    expect(signals.at(-1)).toMatchObject({ kind: 'link', link: { id: 'ab', srcLatencyMs: 3 } });
    // B's end, measured by B (held elsewhere here), is B's to report.
    const count = signals.length;
    peers.measured(
      a.link,
      new Map([
        ['link.ab.latency', { mean: 2_500_000 }],
        ['link.ab.queue_time', { mean: 500_000 }],
      ]),
    );
    expect(signals.length).toBe(count);
  });
});

describe('fleetRouterOf', () => {
  it('keeps a router within what the fleet signal allows, so one router cannot make its replica’s state unreadable', () => {
    const good = listener(1);
    const peer: ConnectedPeer = {
      id: 'A',
      link: { connectedAt: new Date('2026-01-01T00:00:00Z') } as RouterLink,
      version: 'v'.repeat(300),
      listeners: [{ ...good, address: 'x'.repeat(1025) }, ...Array.from({ length: 70 }, () => good)],
      cost: 0,
      noTraversal: false,
    };
    const r = fleetRouterOf(peer);
    expect(fleetRouterSchema.safeParse(r).success).toBe(true);
    expect(r.listeners).toHaveLength(64);
    expect(r.listeners[0]).toEqual(good);
    expect(r.version).toHaveLength(256);
    // Without the bounds the receivers refuse it.
    expect(fleetRouterSchema.safeParse({ ...r, listeners: peer.listeners }).success).toBe(false);
  });
});
