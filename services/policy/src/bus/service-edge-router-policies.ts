import type { OperationHandlersPart } from '@ziti/platform';
import type { PolicyService } from '../domain/policies.ts';
import { type PolicyResource, policyHandlers } from './policy-handlers.ts';

/** `/service-edge-router-policies` (ZITI-FACTS §12.6): services × edge routers. */
export const serviceEdgeRouterPolicyResource: PolicyResource = {
  collection: 'service-edge-router-policies',
  linkKeys: ['edge-routers', 'services'],
  extra: () => ({}),
};

export function serviceEdgeRouterPolicyOperations(policies: () => PolicyService) {
  const h = policyHandlers(serviceEdgeRouterPolicyResource, policies);
  return {
    'management.listServiceEdgeRouterPolicies': h.list,
    'management.createServiceEdgeRouterPolicy': h.create,
    'management.detailServiceEdgeRouterPolicy': h.detail,
    'management.updateServiceEdgeRouterPolicy': h.update,
    'management.patchServiceEdgeRouterPolicy': h.patch,
    'management.deleteServiceEdgeRouterPolicy': h.delete,
  } satisfies OperationHandlersPart<'policy'>;
}
