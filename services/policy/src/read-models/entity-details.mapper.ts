import {
  type EdgeRouterState,
  type RouterPresenceState,
  type RouterPresenceView,
  edgeRouterLinks,
  neverConnected,
} from '@ziti/contracts';

/**
 * What policy's own reads show of edge routers (sessions, the client API's router lists, policy
 * advice), built from its read models. The association lists (`/services/{id}/identities`, …) show
 * identities and edge routers as their owners do (relations/relations.domain.ts `withOwnerDetails`).
 */

/** The base entity fields and links of an edge router, as every router shape has them. */
export function edgeRouterBase(r: EdgeRouterState) {
  return { id: r.id, createdAt: r.createdAt, updatedAt: r.updatedAt, tags: r.tags, _links: edgeRouterLinks(r.id) };
}

/**
 * What policy's reads show of a router's control channel: the reference reads it from the broker
 * (`Broker.GetEdgeRouterState`, ziti `controller/env/sync.go RouterStateValues`) in every router
 * shape (`edge_router_api_model.go`, `session_api_model.go getSessionEdgeRouters`,
 * `service_router.go getServiceEdgeRouters`, `current_identity_api_model.go`). While the router is
 * online that is what it announced (inventory's record of its presence). Once it disconnects the
 * reference drops its state (`sync_strats/sync_instant.go RouterDisconnected` removes it from the
 * map, and `rtx.go GetState` of a missing router answers `NewRouterStatusValues`): an offline router
 * shows exactly as one that never connected — offline, hostname "", no protocols, `SYNC_UNKNOWN`,
 * empty version info — whatever the record kept of its last connection.
 */
export function routerPresenceShown(p: RouterPresenceState | null | undefined): RouterPresenceView {
  if (!p?.isOnline) return neverConnected;
  return {
    isOnline: true,
    hostname: p.hostname,
    supportedProtocols: p.supportedProtocols,
    versionInfo: p.versionInfo,
    syncStatus: p.syncStatus,
  };
}
