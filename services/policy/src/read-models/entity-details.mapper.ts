import {
  type EdgeRouterState,
  type IdentityState,
  edgeRouterDetailFields,
  edgeRouterLinks,
  identityLinks,
  noVersionInfo,
} from '@ziti/contracts';

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
 * As inventory's detail, from the same fields. Not in `edgeRouter.*` state (inventory owns them):
 * the certificates (`certPem`, `unverifiedCertPem`, `unverifiedFingerprint`: null, as inventory
 * answers before enrollment), the version info, and the enrollment fields of an unverified router
 * (omitted: the spec makes them optional and only inventory holds the enrollment).
 */
export function edgeRouterDetailOf(r: EdgeRouterState) {
  return {
    ...edgeRouterBase(r),
    ...edgeRouterDetailFields(r),
    certPem: null,
    unverifiedFingerprint: null,
    unverifiedCertPem: null,
    versionInfo: noVersionInfo,
  };
}
