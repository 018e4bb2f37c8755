import type { OperationHandlers } from '@ziti/platform';
import type { ClientEdgeRouterService } from './client-edge-routers/client-edge-routers.domain.ts';
import { clientEdgeRouterOperations } from './client-edge-routers/client-edge-routers.transport.ts';
import type { ClientTerminators } from './client-terminators/client-terminators.domain.ts';
import { clientTerminatorOperations } from './client-terminators/client-terminators.transport.ts';
import {
  edgeRouterPolicyOperations,
  edgeRouterPolicyRelationOperations,
} from './policies/edge-router-policies.transport.ts';
import type { PolicyAdvisor } from './policy-advice/policy-advice.domain.ts';
import { policyAdviceOperations } from './policy-advice/policy-advice.transport.ts';
import type { PostureCheckService } from './posture/posture-checks.domain.ts';
import { postureCheckOperations } from './posture/posture-checks.transport.ts';
import type { PostureDataService } from './posture/posture-data.domain.ts';
import { postureResponseOperations } from './posture/posture-responses.transport.ts';
import type { RoleAttributeService } from './read-models/role-attributes.domain.ts';
import { roleAttributeOperations } from './read-models/role-attributes.transport.ts';
import type { RelationService } from './relations/relations.domain.ts';
import {
  type RelationDeps,
  edgeRouterRelationOperations,
  identityRelationOperations,
  serviceRelationOperations,
} from './relations/relations.transport.ts';
import {
  serviceEdgeRouterPolicyOperations,
  serviceEdgeRouterPolicyRelationOperations,
} from './policies/service-edge-router-policies.transport.ts';
import { servicePolicyOperations, servicePolicyRelationOperations } from './policies/service-policies.transport.ts';
import type { ServiceViewService } from './services/service-view.domain.ts';
import { serviceOperations } from './services/services.transport.ts';
import type { SessionService } from './sessions/sessions.domain.ts';
import { sessionOperations } from './sessions/sessions.transport.ts';
import type { PolicyService } from './policies/policies.domain.ts';
import type { WhatIfAnalysis } from './what-if/what-if.domain.ts';
import { whatIfOperations } from './what-if/what-if.transport.ts';

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
  whatIf: WhatIfAnalysis;
}

/**
 * Every operation policy owns, keyed `<api>.<operationId>`: the resources' slices merged (the
 * compiler checks that the table names each one, and each slice that its keys are policy's).
 */
export function policyOperations(deps: PolicyOperationDeps): OperationHandlers<'policy'> {
  const related = (): RelationDeps => deps;
  return {
    ...roleAttributeOperations(() => deps.roleAttributes),
    ...servicePolicyOperations(() => deps.servicePolicies),
    ...edgeRouterPolicyOperations(() => deps.edgeRouterPolicies),
    ...serviceEdgeRouterPolicyOperations(() => deps.serviceEdgeRouterPolicies),
    ...identityRelationOperations(related),
    ...serviceRelationOperations(related),
    ...edgeRouterRelationOperations(related),
    ...servicePolicyRelationOperations(related),
    ...edgeRouterPolicyRelationOperations(related),
    ...serviceEdgeRouterPolicyRelationOperations(related),
    ...policyAdviceOperations(() => deps),
    ...clientEdgeRouterOperations(() => deps),
    ...clientTerminatorOperations(() => deps),
    ...serviceOperations(() => deps.serviceViews),
    ...postureCheckOperations(() => deps.postureChecks),
    ...postureResponseOperations(() => deps.postureData),
    ...sessionOperations(() => deps.sessions),
    ...whatIfOperations(() => deps.whatIf),
  };
}
