import type { OperationHandlersPart } from '@ziti/platform';
import type { PolicyService } from '../domain/policies.ts';
import { type PolicyResource, policyHandlers } from './policy-handlers.ts';

/** `/service-policies` (ZITI-FACTS §12.6): Dial or Bind, identities × services, posture checks. */
export const servicePolicyResource: PolicyResource = {
  collection: 'service-policies',
  linkKeys: ['services', 'identities', 'posture-checks'],
  extra: (p) => ({ type: p.type }),
};

export function servicePolicyOperations(policies: () => PolicyService) {
  const h = policyHandlers(servicePolicyResource, policies);
  return {
    'management.listServicePolicies': h.list,
    'management.createServicePolicy': h.create,
    'management.detailServicePolicy': h.detail,
    'management.updateServicePolicy': h.update,
    'management.patchServicePolicy': h.patch,
    'management.deleteServicePolicy': h.delete,
  } satisfies OperationHandlersPart<'policy'>;
}
