import type { PolicyResource } from './policies.mapper.ts';

/** `/edge-router-policies` (ZITI-FACTS §12.6): identities × edge routers; `isSystem` is on their details only. */
export const edgeRouterPolicyResource: PolicyResource = {
  collection: 'edge-router-policies',
  linkKeys: ['edge-routers', 'identities'],
  extra: (p) => ({ isSystem: p.isSystem }),
};
