import { type OperationHandlersPart, listInputOf, pageReply, pathIdOf } from '@ziti/platform';
import { postureCheckDetail } from '../posture/posture-checks.mapper.ts';
import type { RelationDeps } from '../relations/relations.transport.ts';
import { servicePageReply } from '../services/services.mapper.ts';
import type { PolicyService } from './policies.domain.ts';
import { policyHandlers } from './policies.transport.ts';
import { servicePolicyResource } from './service-policies.mapper.ts';

export function servicePolicyOperations(policies: () => PolicyService) {
  const h = policyHandlers(servicePolicyResource, policies);
  return {
    'management.listServicePolicies': h.list,
    'management.createServicePolicy': h.create,
    'management.detailServicePolicy': h.detail,
    'management.updateServicePolicy': h.update,
    'management.patchServicePolicy': h.patch,
    'management.deleteServicePolicy': h.delete,
  } satisfies OperationHandlersPart<'policy'>;
}

/** `/service-policies/{id}/…` (ZITI-FACTS §6.1, §6.2): the live entities a service policy's roles select. */
export function servicePolicyRelationOperations(deps: () => RelationDeps) {
  const servicePolicy = (id: string) => ({ from: 'servicePolicy' as const, id });
  return {
    'management.listServicePolicyIdentities': async (req) =>
      pageReply(await deps().relations.identityDetails(servicePolicy(pathIdOf(req)), listInputOf(req))),
    'management.listServicePolicyServices': async (req) =>
      servicePageReply(
        deps().serviceViews,
        req,
        await deps().relations.services(servicePolicy(pathIdOf(req)), listInputOf(req)),
      ),
    'management.listServicePolicyPostureChecks': async (req) =>
      pageReply(
        await deps().relations.postureChecks(servicePolicy(pathIdOf(req)), listInputOf(req)),
        postureCheckDetail,
      ),
  } satisfies OperationHandlersPart<'policy'>;
}
