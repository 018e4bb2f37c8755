import type { PolicyResource } from './policies.mapper.ts';

/** `/service-edge-router-policies` (ZITI-FACTS §12.6): services × edge routers. */
export const serviceEdgeRouterPolicyResource: PolicyResource = {
  collection: 'service-edge-router-policies',
  linkKeys: ['edge-routers', 'services'],
  extra: () => ({}),
};
