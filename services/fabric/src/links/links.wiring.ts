import type { HeldLinks } from '../routers/router-link.ports.ts';
import { BusRouterRegistry } from '../routers/routers.adapter.ts';
import type { FabricWiringDeps } from '../shared/fabric-deps.wiring.ts';
import { LinkGraph } from './links.domain.ts';
import { type LinkCircuits, RouterPeers } from './router-peers.domain.ts';

/** The links between routers: the graph paths are chosen over, and the routers told of each other. */
export function linksWiring(deps: FabricWiringDeps, held: HeldLinks) {
  const graph = new LinkGraph();
  return {
    graph,
    /** Built once the circuits exist: a link that goes takes the circuits that crossed it. */
    peers: (circuits: LinkCircuits) =>
      new RouterPeers(graph, circuits, new BusRouterRegistry(deps.bus), held, deps.logger),
  };
}
