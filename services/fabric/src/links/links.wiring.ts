import type { HeldLinks, RoutableRouter } from '../routers/router-link.ports.ts';
import { BusRouterRegistry } from '../routers/routers.adapter.ts';
import type { FabricWiringDeps } from '../shared/fabric-deps.wiring.ts';
import { BusFleetBroadcast, RemoteRouter } from './fleet.adapter.ts';
import { FleetView } from './fleet.domain.ts';
import { FleetFollower } from './fleet.transport.ts';
import { LinkGraph } from './links.domain.ts';
import { type LinkCircuits, RouterPeers } from './router-peers.domain.ts';

/**
 * The links between routers and the fleet they make across fabric replicas (docs/adr/0026): the
 * graph paths are chosen over, the other replicas' routers and links, and the way to a router
 * another replica holds.
 */
export function linksWiring(deps: FabricWiringDeps, held: HeldLinks) {
  const graph = new LinkGraph();
  const fleet = new FleetView(deps.replicaId, deps.config.leaseMs);
  const remote = new Map<string, RemoteRouter>();
  return {
    graph,
    fleet,
    /** A router another replica holds, as a circuit's path instructs it (absent: no replica holds it). */
    remote(routerId: string): RoutableRouter | undefined {
      const r = fleet.router(routerId);
      if (!r) return undefined;
      let proxy = remote.get(routerId);
      if (!proxy || proxy.replicaId !== r.replicaId)
        remote.set(routerId, (proxy = new RemoteRouter(deps.bus, routerId, r.replicaId)));
      return proxy;
    },
    /** Built once the circuits exist: a link that goes takes the circuits that crossed it. */
    peers(circuits: LinkCircuits) {
      const peers = new RouterPeers(
        graph,
        circuits,
        new BusRouterRegistry(deps.bus),
        held,
        fleet,
        new BusFleetBroadcast(deps.bus),
        deps.logger,
      );
      return {
        peers,
        follower: new FleetFollower(deps.bus, deps.replicaId, peers, held, deps.config.leaseMs, deps.logger),
      };
    },
  };
}
