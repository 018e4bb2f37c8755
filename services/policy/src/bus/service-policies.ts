import type { OperationHandlers } from '@ziti/platform';
import type { PolicyService } from '../domain/policies.ts';
import { type PolicyResource, policyHandlers } from './policy-handlers.ts';

/** `/service-policies` (ZITI-FACTS §12.6): Dial or Bind, identities × services, posture checks. */
export const servicePolicyResource: PolicyResource = {
  collection: 'service-policies',
  linkKeys: ['services', 'identities', 'posture-checks'],
  operations: {
    list: 'listServicePolicies',
    create: 'createServicePolicy',
    detail: 'detailServicePolicy',
    update: 'updateServicePolicy',
    patch: 'patchServicePolicy',
    delete: 'deleteServicePolicy',
  },
  extra: (p) => ({ type: p.type }),
};

export function servicePolicyOperations(policies: () => PolicyService): OperationHandlers {
  return policyHandlers(servicePolicyResource, policies);
}
