import { type OperationHandlersPart, pageReply } from '@ziti/platform';
import { postureCheckDetail } from './posture-checks.ts';
import {
  type RelationDeps,
  edgeRouterDetailOf,
  identityDetailOf,
  listInput,
  pathId,
  servicePageReply,
} from './related-details.ts';

/** `/…-policies/{id}/…` (ZITI-FACTS §6.1, §6.2): the live entities a policy's roles select. */
export function policyRelationOperations(deps: () => RelationDeps) {
  const servicePolicy = (id: string) => ({ from: 'servicePolicy' as const, id });
  const edgeRouterPolicy = (id: string) => ({ from: 'edgeRouterPolicy' as const, id });
  const serviceEdgeRouterPolicy = (id: string) => ({ from: 'serviceEdgeRouterPolicy' as const, id });
  const identity = (s: Parameters<typeof identityDetailOf>[0]) => identityDetailOf(s);
  return {
    'management.listServicePolicyIdentities': async (req) =>
      pageReply(await deps().relations.identities(servicePolicy(pathId(req)), listInput(req)), identity),
    'management.listServicePolicyServices': async (req) =>
      servicePageReply(
        deps().serviceViews,
        req,
        await deps().relations.services(servicePolicy(pathId(req)), listInput(req)),
      ),
    'management.listServicePolicyPostureChecks': async (req) =>
      pageReply(await deps().relations.postureChecks(servicePolicy(pathId(req)), listInput(req)), postureCheckDetail),
    'management.listEdgeRouterPolicyIdentities': async (req) =>
      pageReply(await deps().relations.identities(edgeRouterPolicy(pathId(req)), listInput(req)), identity),
    'management.listEdgeRouterPolicyEdgeRouters': async (req) =>
      pageReply(await deps().relations.edgeRouters(edgeRouterPolicy(pathId(req)), listInput(req)), edgeRouterDetailOf),
    'management.listServiceEdgeRouterPolicyServices': async (req) =>
      servicePageReply(
        deps().serviceViews,
        req,
        await deps().relations.services(serviceEdgeRouterPolicy(pathId(req)), listInput(req)),
      ),
    'management.listServiceEdgeRouterPolicyEdgeRouters': async (req) =>
      pageReply(
        await deps().relations.edgeRouters(serviceEdgeRouterPolicy(pathId(req)), listInput(req)),
        edgeRouterDetailOf,
      ),
  } satisfies OperationHandlersPart<'policy'>;
}
