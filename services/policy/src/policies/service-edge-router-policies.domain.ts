import { policyEventTypes } from '@ziti/contracts';
import type { PolicyKindSpec } from './policies.domain.ts';

/** Service-edge-router policies: services × edge routers (ZITI-FACTS §12.6). */
export const serviceEdgeRouterPolicyKind: PolicyKindSpec = {
  kind: 'serviceEdgeRouter',
  singular: 'serviceEdgeRouterPolicy',
  roleFields: ['serviceRoles', 'edgeRouterRoles'],
  hasType: false,
  events: {
    created: policyEventTypes.serviceEdgeRouterPolicyCreated,
    updated: policyEventTypes.serviceEdgeRouterPolicyUpdated,
    deleted: policyEventTypes.serviceEdgeRouterPolicyDeleted,
  },
  store: (s) => s.serviceEdgeRouterPolicies,
};
