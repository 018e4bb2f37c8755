import { type OperationHandlersPart, pageReply } from '@ziti/platform';
import {
  type RelationDeps,
  accessTypeOf,
  edgeRouterDetailOf,
  listInput,
  pathId,
  policyPageReply,
  servicePageReply,
} from './related-details.ts';
import { edgeRouterPolicyResource } from './edge-router-policies.ts';
import { servicePolicyResource } from './service-policies.ts';

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
        { ...of(pathId(req)), ...(accessType ? { accessType } : {}) },
        listInput(req),
      );
      return servicePageReply(deps().serviceViews, req, page);
    },
    'management.listIdentityEdgeRouters': async (req) =>
      pageReply(await deps().relations.edgeRouters(of(pathId(req)), listInput(req)), edgeRouterDetailOf),
    'management.listIdentityServicePolicies': async (req) => {
      const d = deps();
      const page = await d.relations.policies('service', of(pathId(req)), listInput(req));
      return policyPageReply(servicePolicyResource, d.servicePolicies, page);
    },
    // The spec's operation id is spelt `listIdentitysEdgeRouterPolicies`.
    'management.listIdentitysEdgeRouterPolicies': async (req) => {
      const d = deps();
      const page = await d.relations.policies('edgeRouter', of(pathId(req)), listInput(req));
      return policyPageReply(edgeRouterPolicyResource, d.edgeRouterPolicies, page);
    },
  } satisfies OperationHandlersPart<'policy'>;
}
