import { identityLinks } from '@ziti/contracts';
import type { EdgeRouterWithPresence } from '../read-models/read-models.ports.ts';
import { serviceLinks } from '../services/services.mapper.ts';
import type { PolicyAdvice } from './policy-advice.domain.ts';

/**
 * An edge router as a `routerEntityRef` (reference `identity_api_model.go
 * MapAdvisorServiceReachabilityToRestEntity`), online as its presence says (reference
 * `policy_advisor.go getIdentityEdgeRouters`: `IsEdgeRouterOnline`, the broker's state of the
 * router). `ziti edge policy-advisor` counts the online ones itself from these flags.
 */
function routerRef(r: EdgeRouterWithPresence) {
  return {
    _links: {
      self: { href: `./edge-routers/${r.id}` },
      'edge-router-policies': { href: `./edge-routers/${r.id}/edge-router-policies` },
    },
    entity: 'edge-routers',
    id: r.id,
    name: r.name,
    isOnline: r.presence?.isOnline === true,
  };
}

/**
 * The spec's `policyAdvice` as the reference writes it (edge-api 0.26.25 `rest_model/policy_advice.go`):
 * `isBindAllowed`, `isDialAllowed`, `identityRouterCount` and `serviceRouterCount` are `omitempty`
 * there, so they are left out when false or 0. `commonRouters` is not: the reference sends `null`
 * when there is none, which the spec (an array, not nullable) forbids; `[]` is sent instead. The
 * reference lists common routers in map order (random); here by name, then id.
 */
export function policyAdviceDetail(a: PolicyAdvice) {
  return {
    commonRouters: a.commonRouters.map(routerRef),
    identity: {
      _links: identityLinks(a.identity.id, a.identity.authPolicyId),
      entity: 'identities',
      id: a.identity.id,
      name: a.identity.name,
    },
    identityId: a.identity.id,
    ...(a.identityRouterCount > 0 ? { identityRouterCount: a.identityRouterCount } : {}),
    ...(a.bind ? { isBindAllowed: true } : {}),
    ...(a.dial ? { isDialAllowed: true } : {}),
    service: { _links: serviceLinks(a.service.id), entity: 'services', id: a.service.id, name: a.service.name },
    serviceId: a.service.id,
    ...(a.serviceRouterCount > 0 ? { serviceRouterCount: a.serviceRouterCount } : {}),
  };
}
