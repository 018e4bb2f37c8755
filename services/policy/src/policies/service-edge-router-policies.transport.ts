import { type OperationHandlersPart, listInputOf, pageReply, pathIdOf } from '@ziti/platform';
import type { RelationDeps } from '../relations/relations.transport.ts';
import { servicePageReply } from '../services/services.mapper.ts';
import type { PolicyService } from './policies.domain.ts';
import { policyHandlers } from './policies.transport.ts';
import { serviceEdgeRouterPolicyResource } from './service-edge-router-policies.mapper.ts';

export function serviceEdgeRouterPolicyOperations(policies: () => PolicyService) {
  const h = policyHandlers(serviceEdgeRouterPolicyResource, policies);
  return {
    'management.listServiceEdgeRouterPolicies': h.list,
    'management.createServiceEdgeRouterPolicy': h.create,
    'management.detailServiceEdgeRouterPolicy': h.detail,
    'management.updateServiceEdgeRouterPolicy': h.update,
    'management.patchServiceEdgeRouterPolicy': h.patch,
    'management.deleteServiceEdgeRouterPolicy': h.delete,
  } satisfies OperationHandlersPart<'policy'>;
}

/**
 * `/service-edge-router-policies/{id}/…` (ZITI-FACTS §6.1, §6.2): the live entities a
 * service-edge-router policy's roles select.
 */
export function serviceEdgeRouterPolicyRelationOperations(deps: () => RelationDeps) {
  const serviceEdgeRouterPolicy = (id: string) => ({ from: 'serviceEdgeRouterPolicy' as const, id });
  return {
    'management.listServiceEdgeRouterPolicyServices': async (req) =>
      servicePageReply(
        deps().serviceViews,
        req,
        await deps().relations.services(serviceEdgeRouterPolicy(pathIdOf(req)), listInputOf(req)),
      ),
    'management.listServiceEdgeRouterPolicyEdgeRouters': async (req) =>
      pageReply(await deps().relations.edgeRouterDetails(serviceEdgeRouterPolicy(pathIdOf(req)), listInputOf(req))),
  } satisfies OperationHandlersPart<'policy'>;
}
