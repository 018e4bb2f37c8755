import type { OperationRequest } from '@ziti/contracts';
import { type OperationHandlers, listInputOf, pageReply } from '@ziti/platform';
import type { PolicyService } from '../domain/policies.ts';
import type { RelationService } from '../domain/relations.ts';
import type { RoleAttributeService, RoleAttributeSource } from '../domain/role-attributes.ts';
import { edgeRouterPolicyOperations } from './edge-router-policies.ts';
import { edgeRouterRelationOperations } from './edge-router-relations.ts';
import { identityRelationOperations } from './identity-relations.ts';
import { policyRelationOperations } from './policy-relations.ts';
import type { RelationDeps } from './related-details.ts';
import { serviceEdgeRouterPolicyOperations } from './service-edge-router-policies.ts';
import { servicePolicyOperations } from './service-policies.ts';
import { serviceRelationOperations } from './service-relations.ts';
import { policyAdviceOperations } from './policy-advice.ts';
import { clientEdgeRouterOperations } from './client-edge-routers.ts';
import { clientTerminatorOperations } from './client-terminators.ts';
import type { ClientTerminators } from '../domain/client-terminators.ts';
import type { PolicyAdvisor } from '../domain/advice.ts';
import type { ClientEdgeRouterService } from '../domain/client-edge-routers.ts';
import { serviceOperations } from './services.ts';
import { sessionOperations } from './sessions.ts';
import type { SessionService } from '../domain/sessions.ts';
import type { ServiceViewService } from '../domain/service-view.ts';
import { postureCheckOperations } from './posture-checks.ts';
import { postureResponseOperations } from './posture-responses.ts';
import type { PostureCheckService } from '../domain/posture-checks.ts';
import type { PostureDataService } from '../domain/posture-data.ts';

export interface PolicyOperationDeps {
  roleAttributes: RoleAttributeService;
  servicePolicies: PolicyService;
  edgeRouterPolicies: PolicyService;
  serviceEdgeRouterPolicies: PolicyService;
  relations: RelationService;
  advice: PolicyAdvisor;
  clientEdgeRouters: ClientEdgeRouterService;
  clientTerminators: ClientTerminators;
  serviceViews: ServiceViewService;
  postureChecks: PostureCheckService;
  postureData: PostureDataService;
  sessions: SessionService;
}

/** `/…-role-attributes`: the distinct attributes of the live entities of a read model (ZITI-FACTS §3.4). */
function roleAttributes(service: () => RoleAttributeService, of: RoleAttributeSource) {
  return async (req: OperationRequest) => {
    const { filter } = listInputOf(req);
    const page = await service().list(of, filter);
    // As the reference: no `filterableFields` on these lists.
    return pageReply({ ...page, filterableFields: [] });
  };
}

/** Every operation policy owns, keyed `<api>.<operationId>` (the compiler checks it names each one). */
export function policyOperations(deps: PolicyOperationDeps = {} as PolicyOperationDeps): OperationHandlers<'policy'> {
  const attributes = () => deps.roleAttributes;
  const related = (): RelationDeps => deps;
  return {
    'management.listIdentityRoleAttributes': roleAttributes(attributes, 'identities'),
    'management.listServiceRoleAttributes': roleAttributes(attributes, 'services'),
    'management.listEdgeRouterRoleAttributes': roleAttributes(attributes, 'edgeRouters'),
    ...servicePolicyOperations(() => deps.servicePolicies),
    ...edgeRouterPolicyOperations(() => deps.edgeRouterPolicies),
    ...serviceEdgeRouterPolicyOperations(() => deps.serviceEdgeRouterPolicies),
    ...identityRelationOperations(related),
    ...serviceRelationOperations(related),
    ...edgeRouterRelationOperations(related),
    ...policyRelationOperations(related),
    ...policyAdviceOperations(() => deps),
    ...clientEdgeRouterOperations(() => deps),
    ...clientTerminatorOperations(() => deps),
    ...serviceOperations(() => deps.serviceViews),
    ...postureCheckOperations(() => deps.postureChecks),
    ...postureResponseOperations(() => deps.postureData),
    ...sessionOperations(() => deps.sessions),
  };
}
