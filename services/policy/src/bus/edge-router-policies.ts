import type { OperationHandlersPart } from '@ziti/platform';
import type { PolicyService } from '../domain/policies.ts';
import { type PolicyResource, policyHandlers } from './policy-handlers.ts';

/** `/edge-router-policies` (ZITI-FACTS §12.6): identities × edge routers; `isSystem` is on their details only. */
export const edgeRouterPolicyResource: PolicyResource = {
  collection: 'edge-router-policies',
  linkKeys: ['edge-routers', 'identities'],
  extra: (p) => ({ isSystem: p.isSystem }),
};

export function edgeRouterPolicyOperations(policies: () => PolicyService) {
  const h = policyHandlers(edgeRouterPolicyResource, policies);
  return {
    'management.listEdgeRouterPolicies': h.list,
    'management.createEdgeRouterPolicy': h.create,
    'management.detailEdgeRouterPolicy': h.detail,
    'management.updateEdgeRouterPolicy': h.update,
    'management.patchEdgeRouterPolicy': h.patch,
    'management.deleteEdgeRouterPolicy': h.delete,
  } satisfies OperationHandlersPart<'policy'>;
}
