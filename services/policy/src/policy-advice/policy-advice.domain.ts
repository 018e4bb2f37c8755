import { ApiError, type IdentityState, type ServiceState } from '@ziti/contracts';
import type { EdgeRouterWithPresence } from '../read-models/read-models.ports.ts';
import type { AdviceReader } from './policy-advice.ports.ts';

/**
 * What the derived access tables (docs/adr/0009) say about one identity and one service: whether a
 * Dial or Bind service policy selects both (`identity_services`), how many edge routers the
 * identity reaches through its edge-router policies (`identity_edge_routers`), how many the service
 * reaches through its service-edge-router policies (`service_edge_routers`), and the routers in
 * both, each with its presence (whether it is online). Read from the tables, never by evaluating
 * policies.
 */
export interface Reachability {
  dial: boolean;
  bind: boolean;
  identityRouterCount: number;
  serviceRouterCount: number;
  commonRouters: EdgeRouterWithPresence[];
}

export interface PolicyAdvice extends Reachability {
  identity: IdentityState;
  service: ServiceState;
}

/**
 * `GET /identities/{id}/policy-advice/{serviceId}` (reference: `controller/model/policy_advisor.go
 * AnalyzeServiceReachability`): may the identity dial or bind the service, and through which edge
 * routers could it connect. As the reference, admins get no special treatment (only policies
 * count), the identity's router count includes routers that are not enrolled yet, and an unknown
 * identity (checked first) or service is NOT_FOUND with the entity's not-found cause.
 */
export class PolicyAdvisor {
  constructor(private readonly read: AdviceReader) {}

  analyze(identityId: string, serviceId: string): Promise<PolicyAdvice> {
    return this.read(async (store) => {
      const identity = await store.identity(identityId);
      if (!identity) throw ApiError.notFound('identity', identityId);
      const service = await store.service(serviceId);
      if (!service) throw ApiError.notFound('service', serviceId);
      return { identity, service, ...(await store.reachability(identity.id, service.id)) };
    });
  }
}
