import type { PolicyResource } from './policies.mapper.ts';

/** `/service-policies` (ZITI-FACTS §12.6): Dial or Bind, identities × services, posture checks. */
export const servicePolicyResource: PolicyResource = {
  collection: 'service-policies',
  linkKeys: ['services', 'identities', 'posture-checks'],
  extra: (p) => ({ type: p.type }),
};
