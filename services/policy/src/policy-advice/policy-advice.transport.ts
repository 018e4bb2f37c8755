import type { OperationHandlersPart } from '@ziti/platform';
import { pathIdOf, reply } from '@ziti/platform';
import type { PolicyAdvisor } from './policy-advice.domain.ts';
import { policyAdviceDetail } from './policy-advice.mapper.ts';

/** What the policy-advice transport calls; read per request, so the operation key exists before wiring. */
export interface PolicyAdviceDeps {
  advice: PolicyAdvisor;
}

/** Management `GET /identities/{id}/policy-advice/{serviceId}` (admin only; the gateway checks it). */
export function policyAdviceOperations(deps: () => PolicyAdviceDeps) {
  return {
    'management.getIdentityPolicyAdvice': async (req) =>
      reply.ok(policyAdviceDetail(await deps().advice.analyze(pathIdOf(req), req.params.serviceId ?? ''))),
  } satisfies OperationHandlersPart<'policy'>;
}
