import { type OperationHandlersPart, pageReply } from '@ziti/platform';
import {
  type RelationDeps,
  accessTypeOf,
  edgeRouterDetailOf,
  identityDetailOf,
  listInput,
  pathId,
  policyPageReply,
} from './related-details.ts';
import { serviceEdgeRouterPolicyResource } from './service-edge-router-policies.ts';
import { servicePolicyResource } from './service-policies.ts';

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
      const page = await deps().relations.identities(
        { ...of(pathId(req)), ...(accessType ? { accessType } : {}) },
        listInput(req),
      );
      return pageReply(page, (s) => identityDetailOf(s));
    },
    'management.listServiceEdgeRouters': async (req) =>
      pageReply(await deps().relations.edgeRouters(of(pathId(req)), listInput(req)), edgeRouterDetailOf),
    'management.listServiceServicePolicies': async (req) => {
      const d = deps();
      const page = await d.relations.policies('service', of(pathId(req)), listInput(req));
      return policyPageReply(servicePolicyResource, d.servicePolicies, page);
    },
    'management.listServiceServiceEdgeRouterPolicies': async (req) => {
      const d = deps();
      const page = await d.relations.policies('serviceEdgeRouter', of(pathId(req)), listInput(req));
      return policyPageReply(serviceEdgeRouterPolicyResource, d.serviceEdgeRouterPolicies, page);
    },
  } satisfies OperationHandlersPart<'policy'>;
}
