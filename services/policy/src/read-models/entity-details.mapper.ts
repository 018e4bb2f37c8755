import {
  type EdgeRouterState,
  type IdentityState,
  type RouterPresenceState,
  type RouterPresenceView,
  edgeRouterDetailFields,
  edgeRouterLinks,
  identityLinks,
  neverConnected,
} from '@ziti/contracts';
import type { EdgeRouterWithPresence } from './read-models.ports.ts';

/**
 * Wire shapes (ZITI-FACTS §12) of the identities and edge routers the association lists return,
 * built from policy's read models — the owners' published state — field by field as auth and
 * inventory build their details (in their identity and edge-router mappers). A field the owner does
 * not publish gets the value the owner itself answers when it does not know it. The service detail
 * is the viewer's (services/services.mapper.ts).
 */

/**
 * Not in `identity.*` state (auth owns them): `hasApiSession` (API sessions), `isMfaEnabled`
 * (MFA), `authenticators`, `enrollment` (pki-enrollment), hosting costs/precedences, `appData`,
 * `envInfo`, `sdkInfo`. They answer as for an identity without any: false, {}, 0 — what auth
 * answers when it has none. The auth policy's name is not known here either: its reference has no
 * `name`, as auth's references to an entity it can not name.
 */
export function identityDetailOf(s: IdentityState, now = new Date()) {
  const disabled = s.disabled && (s.disabledUntil === null || new Date(s.disabledUntil) > now);
  return {
    id: s.id,
    createdAt: s.createdAt,
    updatedAt: s.updatedAt,
    tags: s.tags,
    _links: identityLinks(s.id, s.authPolicyId),
    name: s.name,
    type: {
      id: s.typeId,
      name: s.typeId,
      entity: 'identity-types',
      _links: { self: { href: `./identity-types/${s.typeId}` } },
    },
    typeId: s.typeId,
    isAdmin: s.isAdmin,
    isDefaultAdmin: s.isDefaultAdmin,
    roleAttributes: s.roleAttributes,
    hasApiSession: false,
    // As auth: no edge router holds a control connection to this controller yet.
    hasEdgeRouterConnection: false,
    isMfaEnabled: false,
    authPolicyId: s.authPolicyId,
    authPolicy: {
      id: s.authPolicyId,
      entity: 'auth-policies',
      _links: { self: { href: `./auth-policies/${s.authPolicyId}` } },
    },
    disabled,
    ...(s.disabledAt ? { disabledAt: s.disabledAt } : {}),
    ...(s.disabledUntil ? { disabledUntil: s.disabledUntil } : {}),
    externalId: s.externalId,
    defaultHostingCost: 0,
    serviceHostingCosts: {},
    serviceHostingPrecedences: {},
    appData: {},
    envInfo: {},
    sdkInfo: {},
    authenticators: {},
    enrollment: {},
  };
}

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

/**
 * As inventory's detail, from the same fields and the router's presence (`routerPresenceShown`).
 * Not in `edgeRouter.*` state (inventory owns them): the certificates (`certPem`,
 * `unverifiedCertPem`, `unverifiedFingerprint`: null, as inventory answers before enrollment) and the
 * enrollment fields of an unverified router (omitted: the spec makes them optional and only
 * inventory holds the enrollment).
 */
export function edgeRouterDetailOf(r: EdgeRouterWithPresence) {
  return {
    ...edgeRouterBase(r),
    ...edgeRouterDetailFields(r, routerPresenceShown(r.presence)),
    certPem: null,
    unverifiedFingerprint: null,
    unverifiedCertPem: null,
  };
}
