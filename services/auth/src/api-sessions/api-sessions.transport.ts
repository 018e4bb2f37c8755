import type { OperationRequest, OperationRequestOf } from '@ziti/contracts';
import {
  type OperationHandlers,
  callerOf,
  firstQueryValue,
  listInputOf,
  pageReply,
  pathIdOf,
  reply,
} from '@ziti/platform';
import { apiSessionDetail, currentApiSessionDetail } from './api-sessions.mapper.ts';
import type { AuthenticationService } from './authentication.domain.ts';

export interface ApiSessionOperationDeps {
  authentication: AuthenticationService;
}

/** Logins (`/authenticate`), the current API session, logout and the management of API sessions. */
export function apiSessionOperations(deps: ApiSessionOperationDeps) {
  const { authentication } = deps;

  const authenticate = async (req: OperationRequestOf<'client.authenticate' | 'management.authenticate'>) => {
    const b = req.body ?? {};
    const { session, identity, authQueries } = await authentication.authenticate({
      method: firstQueryValue(req.query.method) ?? '',
      ...(b.username !== undefined ? { username: b.username } : {}),
      ...(b.password !== undefined ? { password: b.password } : {}),
      ...(b.configTypes ? { configTypes: b.configTypes } : {}),
      ...(b.envInfo ? { envInfo: b.envInfo } : {}),
      ...(b.sdkInfo ? { sdkInfo: b.sdkInfo } : {}),
      remoteAddress: req.remoteAddress,
      ...(req.clientCertChain ? { clientCertChain: req.clientCertChain } : {}),
      ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}),
    });
    return {
      status: 200,
      body: {
        data: currentApiSessionDetail(session, identity, authentication.sessionTtlSeconds, authQueries),
        meta: {},
      },
      headers: { 'zt-session': session.token },
    };
  };

  const getCurrentApiSession = async (req: OperationRequest) => {
    const who = callerOf(req);
    const { session, identity } = await authentication.current(who.apiSessionId);
    // The gateway computed this request's pending factors (the external JWT depends on the request).
    return reply.ok(currentApiSessionDetail(session, identity, authentication.sessionTtlSeconds, who.authQueries));
  };

  const logout = async (req: OperationRequest) => {
    await authentication.delete(callerOf(req).apiSessionId, 'logout');
    return reply.empty();
  };

  return {
    'client.authenticate': authenticate,
    'management.authenticate': authenticate,
    'client.getCurrentAPISession': getCurrentApiSession,
    'management.getCurrentAPISession': getCurrentApiSession,
    'client.deleteCurrentApiSession': logout,
    'management.deleteCurrentApiSession': logout,

    'management.listAPISessions': async (req) => {
      const p = await authentication.list(listInputOf(req));
      const owners = await authentication.identityNames(p.items.map((s) => s.identityId));
      return pageReply(p, (s) => apiSessionDetail(s, owners.get(s.identityId)));
    },
    'management.detailAPISessions': async (req) => {
      const s = await authentication.get(pathIdOf(req));
      const owners = await authentication.identityNames([s.identityId]);
      return reply.ok(apiSessionDetail(s, owners.get(s.identityId)));
    },
    'management.deleteAPISessions': async (req) => {
      await authentication.delete(pathIdOf(req));
      return reply.empty();
    },
  } satisfies Partial<OperationHandlers<'auth'>>;
}
