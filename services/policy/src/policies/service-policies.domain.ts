import { policyEventTypes } from '@ziti/contracts';
import type { PolicyKindSpec } from './policies.domain.ts';

/** Service policies: Dial or Bind, identities × services, with posture checks (ZITI-FACTS §12.6). */
export const servicePolicyKind: PolicyKindSpec = {
  kind: 'service',
  singular: 'servicePolicy',
  roleFields: ['identityRoles', 'serviceRoles', 'postureCheckRoles'],
  hasType: true,
  events: {
    created: policyEventTypes.servicePolicyCreated,
    updated: policyEventTypes.servicePolicyUpdated,
    deleted: policyEventTypes.servicePolicyDeleted,
  },
  store: (s) => s.servicePolicies,
};
