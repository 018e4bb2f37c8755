import type { OperationRequest } from '@ziti/contracts';
import { type OperationHandlersPart, listInputOf, pageReply, pathIdOf } from '@ziti/platform';
import { edgeRouterPolicyResource } from '../policies/edge-router-policies.mapper.ts';
import { serviceEdgeRouterPolicyResource } from '../policies/service-edge-router-policies.mapper.ts';
import { servicePolicyResource } from '../policies/service-policies.mapper.ts';
import type { ServiceViewService } from '../services/service-view.domain.ts';
import { servicePageReply } from '../services/services.mapper.ts';
import type { PolicyService } from '../policies/policies.domain.ts';
import { policyPageReply } from '../policies/policies.mapper.ts';
import type { RelationService } from './relations.domain.ts';

/**
 * What the association transports call (here, and each policy kind's `/…-policies/{id}/…` lists);
 * read per request, so the operation keys exist before wiring. The identities and edge routers they
 * list are shown as their owners (auth, inventory) show them (`identityDetails`, `edgeRouterDetails`),
 * services as policy's service view does.
 */
export interface RelationDeps {
  relations: RelationService;
  serviceViews: ServiceViewService;
  servicePolicies: PolicyService;
  edgeRouterPolicies: PolicyService;
  serviceEdgeRouterPolicies: PolicyService;
}

/** The spec's `policyType` (dial | bind; the gateway validated it), absent when not given. */
export function accessTypeOf(req: OperationRequest): 'dial' | 'bind' | undefined {
  const raw = req.query.policyType;
  const value = Array.isArray(raw) ? raw[0] : raw;
  return value === 'dial' || value === 'bind' ? value : undefined;
}

/**
 * `/identities/{id}/…` (ZITI-FACTS §6.3): the services an identity may dial or bind (`policyType`
 * narrows to one), its edge routers, and the policies that select it.
 */
export function identityRelationOperations(deps: () => RelationDeps) {
  const of = (id: string) => ({ from: 'identity' as const, id });
  return {
    'management.listIdentityServices': async (req) => {
      const accessType = accessTypeOf(req);
      const page = await deps().relations.services(
        { ...of(pathIdOf(req)), ...(accessType ? { accessType } : {}) },
        listInputOf(req),
      );
      return servicePageReply(deps().serviceViews, req, page);
    },
    'management.listIdentityEdgeRouters': async (req) =>
      pageReply(await deps().relations.edgeRouterDetails(of(pathIdOf(req)), listInputOf(req))),
    'management.listIdentityServicePolicies': async (req) => {
      const d = deps();
      const page = await d.relations.policies('service', of(pathIdOf(req)), listInputOf(req));
      return policyPageReply(servicePolicyResource, d.servicePolicies, page);
    },
    // The spec's operation id is spelt `listIdentitysEdgeRouterPolicies`.
    'management.listIdentitysEdgeRouterPolicies': async (req) => {
      const d = deps();
      const page = await d.relations.policies('edgeRouter', of(pathIdOf(req)), listInputOf(req));
      return policyPageReply(edgeRouterPolicyResource, d.edgeRouterPolicies, page);
    },
  } satisfies OperationHandlersPart<'policy'>;
}

/**
 * `/services/{id}/…` (ZITI-FACTS §6.3): the identities that may dial or bind a service (`policyType`
 * narrows to one), its edge routers, and the policies that select it. The client API's
 * `/services/{id}/edge-routers` (a different shape, for the caller's own sessions) is not this.
 */
export function serviceRelationOperations(deps: () => RelationDeps) {
  const of = (id: string) => ({ from: 'service' as const, id });
  return {
    'management.listServiceIdentities': async (req) => {
      const accessType = accessTypeOf(req);
      const page = await deps().relations.identityDetails(
        { ...of(pathIdOf(req)), ...(accessType ? { accessType } : {}) },
        listInputOf(req),
      );
      return pageReply(page);
    },
    'management.listServiceEdgeRouters': async (req) =>
      pageReply(await deps().relations.edgeRouterDetails(of(pathIdOf(req)), listInputOf(req))),
    'management.listServiceServicePolicies': async (req) => {
      const d = deps();
      const page = await d.relations.policies('service', of(pathIdOf(req)), listInputOf(req));
      return policyPageReply(servicePolicyResource, d.servicePolicies, page);
    },
    'management.listServiceServiceEdgeRouterPolicies': async (req) => {
      const d = deps();
      const page = await d.relations.policies('serviceEdgeRouter', of(pathIdOf(req)), listInputOf(req));
      return policyPageReply(serviceEdgeRouterPolicyResource, d.serviceEdgeRouterPolicies, page);
    },
  } satisfies OperationHandlersPart<'policy'>;
}

/** `/edge-routers/{id}/…` (ZITI-FACTS §6.3): who may use an edge router, for what, and through which policies. */
export function edgeRouterRelationOperations(deps: () => RelationDeps) {
  const of = (id: string) => ({ from: 'edgeRouter' as const, id });
  return {
    'management.listEdgeRouterIdentities': async (req) =>
      pageReply(await deps().relations.identityDetails(of(pathIdOf(req)), listInputOf(req))),
    'management.listEdgeRouterServices': async (req) =>
      servicePageReply(deps().serviceViews, req, await deps().relations.services(of(pathIdOf(req)), listInputOf(req))),
    'management.listEdgeRouterEdgeRouterPolicies': async (req) => {
      const d = deps();
      const page = await d.relations.policies('edgeRouter', of(pathIdOf(req)), listInputOf(req));
      return policyPageReply(edgeRouterPolicyResource, d.edgeRouterPolicies, page);
    },
    // The 0.26.25 spec declares a service-policy list here, but the reference answers the router's
    // service-edge-router policies (ziti `edge_router_router.go` maps them with
    // MapServiceEdgeRouterPolicyToRestEntity): what they are is what is answered; no service-policy
    // fields (`type`, identity and posture-check roles) are invented for them.
    'management.listEdgeRouterServiceEdgeRouterPolicies': async (req) => {
      const d = deps();
      const page = await d.relations.policies('serviceEdgeRouter', of(pathIdOf(req)), listInputOf(req));
      return policyPageReply(serviceEdgeRouterPolicyResource, d.serviceEdgeRouterPolicies, page);
    },
  } satisfies OperationHandlersPart<'policy'>;
}
