import { type OperationHandlers, listInputOf, pageReply, pathIdOf, reply } from '@ziti/platform';
import type { AuthPolicyService } from './auth-policies.domain.ts';
import { authPolicyDetail } from './auth-policies.mapper.ts';

export interface AuthPolicyOperationDeps {
  authPolicies: AuthPolicyService;
}

/** Auth policies (management). */
export function authPolicyOperations(deps: AuthPolicyOperationDeps) {
  return {
    'management.listAuthPolicies': async (req) =>
      pageReply(await deps.authPolicies.list(listInputOf(req)), authPolicyDetail),
    'management.createAuthPolicy': async (req) =>
      reply.created((await deps.authPolicies.create(req.body)).id, 'auth-policies'),
    'management.detailAuthPolicy': async (req) =>
      reply.ok(authPolicyDetail(await deps.authPolicies.get(pathIdOf(req)))),
    'management.updateAuthPolicy': async (req) => {
      await deps.authPolicies.update(pathIdOf(req), req.body, 'replace');
      return reply.empty();
    },
    'management.patchAuthPolicy': async (req) => {
      await deps.authPolicies.update(pathIdOf(req), req.body, 'patch');
      return reply.empty();
    },
    'management.deleteAuthPolicy': async (req) => {
      await deps.authPolicies.delete(pathIdOf(req));
      return reply.empty();
    },
  } satisfies Partial<OperationHandlers<'auth'>>;
}
