import type { OperationHandlers } from '@ziti/platform';
import type { PolicyService } from '../domain/policies.ts';
import { type PolicyResource, policyHandlers } from './policy-handlers.ts';

/** `/service-edge-router-policies` (ZITI-FACTS §12.6): services × edge routers. */
export const serviceEdgeRouterPolicyResource: PolicyResource = {
  collection: 'service-edge-router-policies',
  linkKeys: ['edge-routers', 'services'],
  operations: {
    list: 'listServiceEdgeRouterPolicies',
    create: 'createServiceEdgeRouterPolicy',
    detail: 'detailServiceEdgeRouterPolicy',
    update: 'updateServiceEdgeRouterPolicy',
    patch: 'patchServiceEdgeRouterPolicy',
    delete: 'deleteServiceEdgeRouterPolicy',
  },
  extra: () => ({}),
};

export function serviceEdgeRouterPolicyOperations(policies: () => PolicyService): OperationHandlers {
  return policyHandlers(serviceEdgeRouterPolicyResource, policies);
}
