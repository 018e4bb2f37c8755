import { type OperationHandlersPart, listInputOf, pageReply, pathIdOf } from '@ziti/platform';
import type { RelationDeps } from '../relations/relations.transport.ts';
import type { PolicyService } from './policies.domain.ts';
import { policyHandlers } from './policies.transport.ts';
import { edgeRouterPolicyResource } from './edge-router-policies.mapper.ts';

export function edgeRouterPolicyOperations(policies: () => PolicyService) {
  const h = policyHandlers(edgeRouterPolicyResource, policies);
  return {
    'management.listEdgeRouterPolicies': h.list,
    'management.createEdgeRouterPolicy': h.create,
    'management.detailEdgeRouterPolicy': h.detail,
    'management.updateEdgeRouterPolicy': h.update,
    'management.patchEdgeRouterPolicy': h.patch,
    'management.deleteEdgeRouterPolicy': h.delete,
  } satisfies OperationHandlersPart<'policy'>;
}

/** `/edge-router-policies/{id}/…` (ZITI-FACTS §6.1, §6.2): the live entities an edge-router policy's roles select. */
export function edgeRouterPolicyRelationOperations(deps: () => RelationDeps) {
  const edgeRouterPolicy = (id: string) => ({ from: 'edgeRouterPolicy' as const, id });
  return {
    'management.listEdgeRouterPolicyIdentities': async (req) =>
      pageReply(await deps().relations.identityDetails(edgeRouterPolicy(pathIdOf(req)), listInputOf(req))),
    'management.listEdgeRouterPolicyEdgeRouters': async (req) =>
      pageReply(await deps().relations.edgeRouterDetails(edgeRouterPolicy(pathIdOf(req)), listInputOf(req))),
  } satisfies OperationHandlersPart<'policy'>;
}
