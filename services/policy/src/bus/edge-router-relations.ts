import { type OperationHandlersPart, pageReply } from '@ziti/platform';
import { edgeRouterPolicyResource } from './edge-router-policies.ts';
import {
  type RelationDeps,
  identityDetailOf,
  listInput,
  pathId,
  policyPageReply,
  servicePageReply,
} from './related-details.ts';
import { serviceEdgeRouterPolicyResource } from './service-edge-router-policies.ts';

/** `/edge-routers/{id}/…` (ZITI-FACTS §6.3): who may use an edge router, for what, and through which policies. */
export function edgeRouterRelationOperations(deps: () => RelationDeps) {
  const of = (id: string) => ({ from: 'edgeRouter' as const, id });
  return {
    'management.listEdgeRouterIdentities': async (req) =>
      pageReply(await deps().relations.identities(of(pathId(req)), listInput(req)), (s) => identityDetailOf(s)),
    'management.listEdgeRouterServices': async (req) =>
      servicePageReply(deps().serviceViews, req, await deps().relations.services(of(pathId(req)), listInput(req))),
    'management.listEdgeRouterEdgeRouterPolicies': async (req) => {
      const d = deps();
      const page = await d.relations.policies('edgeRouter', of(pathId(req)), listInput(req));
      return policyPageReply(edgeRouterPolicyResource, d.edgeRouterPolicies, page);
    },
    // The 0.26.25 spec declares a service-policy list here, but the reference answers the router's
    // service-edge-router policies (ziti `edge_router_router.go` maps them with
    // MapServiceEdgeRouterPolicyToRestEntity): what they are is what is answered; no service-policy
    // fields (`type`, identity and posture-check roles) are invented for them.
    'management.listEdgeRouterServiceEdgeRouterPolicies': async (req) => {
      const d = deps();
      const page = await d.relations.policies('serviceEdgeRouter', of(pathId(req)), listInput(req));
      return policyPageReply(serviceEdgeRouterPolicyResource, d.serviceEdgeRouterPolicies, page);
    },
  } satisfies OperationHandlersPart<'policy'>;
}
