import type { RouterConnections } from '../routers/router-connections.domain.ts';
import type { HeldLinks } from '../routers/router-link.ports.ts';
import type { FabricWiringDeps } from '../shared/fabric-deps.wiring.ts';
import { ApiSessionSync } from './api-session-sync.domain.ts';
import { BusApiSessionSource } from './api-sessions.adapter.ts';
import { EdgeStateFollower } from './edge-state-events.transport.ts';

/**
 * The API sessions the edge routers carry (auth's, over the bus), and the follower of what changes
 * them and the routers (started before any router is let in, so no change concerning it is missed).
 */
export function apiSessionsWiring(deps: FabricWiringDeps, held: HeldLinks) {
  const apiSessions = new ApiSessionSync(new BusApiSessionSource(deps.bus), () => held.edge(), deps.logger);
  return {
    apiSessions,
    follower: (routers: RouterConnections) => new EdgeStateFollower(deps.bus, apiSessions, routers, deps.logger),
  };
}
