import type { ServiceView, ServiceViewService } from '../domain/service-view.ts';
import {
  ApiError,
  type EdgeRouterState,
  type IdentityState,
  type OperationReply,
  type OperationRequest,
  type ServiceState,
  edgeRouterDetailFields,
  edgeRouterLinks,
  identityLinks,
  noVersionInfo,
} from '@ziti/contracts';
import { listInputOf, pageReply } from '@ziti/platform';
import type { Policy, PolicyService } from '../domain/policies.ts';
import type { ListInput, ListPage } from '../domain/ports.ts';
import type { RelationService } from '../domain/relations.ts';
import { type PolicyResource, policyDetail } from './policy-handlers.ts';

/**
 * Wire shapes (ZITI-FACTS §12) of the identities, services and edge routers the association lists
 * return, built from policy's read models — the owners' published state — field by field as auth
 * (`services/auth/src/bus/mappers.ts`) and inventory (`services/inventory/src/bus/mappers.ts`) build
 * their details. A field the owner does not publish gets the value the owner itself answers when it
 * does not know it.
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

export function serviceLinks(id: string) {
  const links: Record<string, { href: string }> = { self: { href: `./services/${id}` } };
  for (const key of ['service-edge-router-policies', 'service-policies', 'terminators', 'configs'])
    links[key] = { href: `./services/${id}/${key}` };
  return links;
}

/** A service detail (ZITI-FACTS §10.3, §12.3) as the viewer sees it. */
export function serviceViewDetail(v: ServiceView) {
  const s = v.service;
  return {
    id: s.id,
    createdAt: s.createdAt,
    updatedAt: s.updatedAt,
    tags: s.tags,
    _links: serviceLinks(s.id),
    name: s.name,
    terminatorStrategy: s.terminatorStrategy,
    roleAttributes: s.roleAttributes,
    configs: s.configs,
    config: v.config,
    encryptionRequired: s.encryptionRequired,
    maxIdleTimeMillis: s.maxIdleTimeMillis,
    permissions: v.permissions,
    postureQueries: v.postureQueries,
  };
}

/**
 * A page of services listed for a relation, each with the caller's permissions and posture queries
 * (the reference renders every service detail for the caller, whoever the list is about).
 */
export async function servicePageReply(
  views: ServiceViewService,
  req: OperationRequest,
  page: ListPage<ServiceState>,
): Promise<OperationReply> {
  if (!req.caller) throw new ApiError('UNAUTHORIZED');
  const viewer = { identityId: req.caller.identityId, isAdmin: req.caller.isAdmin };
  const seen = await views.viewsOf(viewer, page.items);
  return pageReply({ ...page, items: seen }, serviceViewDetail);
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

export const pathId = (req: OperationRequest) => req.params.id ?? '';
export const listInput = (req: OperationRequest): ListInput => listInputOf(req);

/** The spec's `policyType` (dial | bind; the gateway validated it), absent when not given. */
export function accessTypeOf(req: OperationRequest): 'dial' | 'bind' | undefined {
  const raw = req.query.policyType;
  const value = Array.isArray(raw) ? raw[0] : raw;
  return value === 'dial' || value === 'bind' ? value : undefined;
}

/** A page of policies with their `…RolesDisplay` names, as the policy lists answer them. */
export async function policyPageReply(
  resource: PolicyResource,
  policies: PolicyService,
  page: ListPage<Policy>,
): Promise<OperationReply> {
  const names = await policies.roleNames(page.items);
  return pageReply(page, (p) => policyDetail(resource, policies.spec.roleFields, p, names));
}

/** What the association transports call; read per request, so the operation keys exist before wiring. */
export interface RelationDeps {
  relations: RelationService;
  serviceViews: ServiceViewService;
  servicePolicies: PolicyService;
  edgeRouterPolicies: PolicyService;
  serviceEdgeRouterPolicies: PolicyService;
}
