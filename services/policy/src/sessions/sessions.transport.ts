import { type OperationRequest, fabricCallContracts } from '@ziti/contracts';
import {
  type CallTable,
  type OperationHandlersPart,
  callerOf,
  callHandlers,
  listInputOf,
  pageReply,
  pathIdOf,
  reply,
} from '@ziti/platform';
import type { SessionUseAuthority } from './session-use.domain.ts';
import type { SessionCaller, SessionService, SessionViewer } from './sessions.domain.ts';
import { failedRequestDetail, sessionDetail } from './sessions.mapper.ts';

/** The calling identity (whether an administrator), which sees its own sessions or, as an admin, every one. */
const viewerOf = (req: OperationRequest): SessionViewer => {
  const { identityId, isAdmin } = callerOf(req);
  return { identityId, isAdmin };
};

/** The caller with its API session, which a session is created for. */
const sessionCallerOf = (req: OperationRequest): SessionCaller => {
  const { identityId, isAdmin, apiSessionId } = callerOf(req);
  return { identityId, isAdmin, apiSessionId };
};

/** Edge sessions on both APIs (ZITI-FACTS §10.1) and an identity's refused requests. */
export function sessionOperations(sessions: () => SessionService) {
  const list = async (req: OperationRequest) =>
    pageReply(await sessions().list(viewerOf(req), listInputOf(req)), sessionDetail);
  const remove = async (req: OperationRequest) => {
    await sessions().delete(viewerOf(req), pathIdOf(req));
    return reply.empty();
  };
  return {
    'client.createSession': async (req) => {
      // A null `tags` (the spec lets it be null) is no tags, as an absent one.
      const { view } = await sessions().create(sessionCallerOf(req), { ...req.body, tags: req.body.tags ?? undefined });
      return reply.ok(sessionDetail(view), 201);
    },
    'client.listSessions': list,
    'client.detailSession': async (req) => reply.ok(sessionDetail(await sessions().get(viewerOf(req), pathIdOf(req)))),
    'client.deleteSession': remove,
    'management.listSessions': list,
    'management.detailSession': async (req) =>
      reply.ok(sessionDetail(await sessions().get(viewerOf(req), pathIdOf(req), true))),
    'management.deleteSession': remove,
    'management.detailSessionRoutePath': async (req) =>
      reply.ok({ routePath: await sessions().routePath(viewerOf(req), pathIdOf(req)) }),
    'management.getIdentityFailedServiceRequests': async (req) =>
      reply.ok((await sessions().failedRequests(pathIdOf(req))).map(failedRequestDetail)),
  } satisfies OperationHandlersPart<'policy'>;
}

/** The call policy serves the router edge: may an edge session be used through a router now? */
export function sessionCalls(sessionUse: SessionUseAuthority): CallTable {
  const { authorizeSessionUse } = fabricCallContracts;
  return callHandlers({ authorizeSessionUse }, { authorizeSessionUse: (request) => sessionUse.authorize(request) });
}
