import type { OperationRequest } from '@ziti/contracts';
import {
  type OperationHandlersPart,
  callerOf,
  listInputOf,
  pageEnvelope,
  pageReply,
  pathIdOf,
  reply,
} from '@ziti/platform';
import type { ClientCaller, ClientEdgeRouterService } from './client-edge-routers.domain.ts';
import { currentIdentityEdgeRouterDetail, serviceEdgeRouterDetail } from './client-edge-routers.mapper.ts';

/** What the client edge-router transports call; read per request, so the operation keys exist before wiring. */
export interface ClientEdgeRouterDeps {
  clientEdgeRouters: ClientEdgeRouterService;
}

function clientCallerOf(req: OperationRequest): ClientCaller {
  const { identityId, apiSessionId, isAdmin } = callerOf(req);
  return { identityId, apiSessionId, isAdmin };
}

/**
 * Client `GET /current-identity/edge-routers` (a list envelope; filter/limit/offset/sort apply as
 * the reference reads them from the URL although the spec declares none) and client
 * `GET /services/{id}/edge-routers`: a detail envelope `{data: {edgeRouters: […]}}` as the reference
 * answers it, paged and filtered by ZitiQL like the other lists, with the page in `meta.pagination`
 * (the reference sends `meta: {}` and at most 25 routers, unfiltered).
 */
export function clientEdgeRouterOperations(deps: () => ClientEdgeRouterDeps) {
  return {
    'client.getCurrentIdentityEdgeRouters': async (req) =>
      pageReply(
        await deps().clientEdgeRouters.currentIdentityEdgeRouters(clientCallerOf(req), listInputOf(req)),
        currentIdentityEdgeRouterDetail,
      ),
    'client.listServiceEdgeRouters': async (req) => {
      // Checked as ServiceAccessTokens says; the gateway's pipeline forwards this header with
      // `authorization` and `mfa-validation-code` (test/e2e/policy-advice.test.ts).
      const page = await deps().clientEdgeRouters.serviceEdgeRouters(
        clientCallerOf(req),
        pathIdOf(req),
        req.headers['session-token'],
        listInputOf(req),
      );
      const { data, meta } = pageEnvelope(page, serviceEdgeRouterDetail);
      return reply.json({ data: { edgeRouters: data }, meta });
    },
  } satisfies OperationHandlersPart<'policy'>;
}
