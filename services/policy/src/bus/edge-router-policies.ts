import type { OperationHandlers } from '@ziti/platform';
import type { PolicyService } from '../domain/policies.ts';
import { type PolicyResource, policyHandlers } from './policy-handlers.ts';

/** `/edge-router-policies` (ZITI-FACTS §12.6): identities × edge routers; `isSystem` is on their details only. */
export const edgeRouterPolicyResource: PolicyResource = {
  collection: 'edge-router-policies',
  linkKeys: ['edge-routers', 'identities'],
  operations: {
    list: 'listEdgeRouterPolicies',
    create: 'createEdgeRouterPolicy',
    detail: 'detailEdgeRouterPolicy',
    update: 'updateEdgeRouterPolicy',
    patch: 'patchEdgeRouterPolicy',
    delete: 'deleteEdgeRouterPolicy',
  },
  extra: (p) => ({ isSystem: p.isSystem }),
};

export function edgeRouterPolicyOperations(policies: () => PolicyService): OperationHandlers {
  return policyHandlers(edgeRouterPolicyResource, policies);
}
