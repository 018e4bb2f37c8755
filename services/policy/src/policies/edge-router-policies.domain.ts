import { policyEventTypes } from '@ziti/contracts';
import type { PolicyKindSpec } from './policies.domain.ts';

/** Edge-router policies: identities × edge routers (ZITI-FACTS §12.6). */
export const edgeRouterPolicyKind: PolicyKindSpec = {
  kind: 'edgeRouter',
  singular: 'edgeRouterPolicy',
  roleFields: ['identityRoles', 'edgeRouterRoles'],
  hasType: false,
  events: {
    created: policyEventTypes.edgeRouterPolicyCreated,
    updated: policyEventTypes.edgeRouterPolicyUpdated,
    deleted: policyEventTypes.edgeRouterPolicyDeleted,
  },
  store: (s) => s.edgeRouterPolicies,
};
