import type { ApiSessionSync } from '../api-sessions/api-session-sync.domain.ts';
import type { Circuits } from '../circuits/circuits.domain.ts';
import type { FabricWiringDeps } from '../shared/fabric-deps.wiring.ts';
import type { Terminators } from '../terminators/terminators.domain.ts';
import { EdgeState } from './edge-state.domain.ts';
import { RouterConnections } from './router-connections.domain.ts';
import type { HeldLinks, PeerWatcher } from './router-link.ports.ts';
import { BusRouterRegistry } from './routers.adapter.ts';

/**
 * The routers this replica holds: admitted against inventory's records, their presence leased
 * there, and the edge state each needs pushed when it connects and dropped when it goes.
 */
export function routersWiring(
  deps: FabricWiringDeps,
  parts: {
    apiSessions: ApiSessionSync;
    terminators: Terminators;
    circuits: Circuits;
    peers: PeerWatcher;
    held: HeldLinks;
  },
) {
  const edgeState = new EdgeState(
    parts.apiSessions,
    parts.terminators,
    parts.circuits,
    (link) => parts.held.of(link.routerId) === link,
    deps.logger,
  );
  return new RouterConnections(
    new BusRouterRegistry(deps.bus),
    edgeState,
    parts.peers,
    { replicaId: deps.replicaId, leaseMs: deps.config.leaseMs, helloTimeoutMs: deps.config.limits.helloTimeoutMs },
    deps.logger,
  );
}
