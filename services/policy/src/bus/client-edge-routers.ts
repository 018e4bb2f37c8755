import { ApiError, type EdgeRouterState, type OperationRequest } from '@ziti/contracts';
import { type OperationHandlersPart, pageEnvelope, pageReply, reply } from '@ziti/platform';
import type { ClientCaller, ClientEdgeRouterService } from '../domain/client-edge-routers.ts';
import { edgeRouterBase, listInput, pathId } from './related-details.ts';

/** What the client edge-router transports call; read per request, so the operation keys exist before wiring. */
export interface ClientEdgeRouterDeps {
  clientEdgeRouters: ClientEdgeRouterService;
}

function callerOf(req: OperationRequest): ClientCaller {
  if (!req.caller) throw new ApiError('UNAUTHORIZED');
  const { identityId, apiSessionId, isAdmin } = req.caller;
  return { identityId, apiSessionId, isAdmin };
}

/**
 * A `currentIdentityEdgeRouterDetail` as the reference writes it (`current_identity_api_model.go
 * MapCurrentIdentityEdgeRouterToRestModel`): base fields, `hostname` always "", the router's state
 * (never connected to this controller yet: offline, `SYNC_UNKNOWN`, as `edgeRouterDetailOf`). The
 * reference leaves `cost`, `noTraversal` and `disabled` unset, i.e. null: the spec lets the first
 * two be null; `disabled` must be a boolean, so it is the router's own. No `appData` (omitempty).
 */
export function currentIdentityEdgeRouterDetail(r: EdgeRouterState) {
  return {
    ...edgeRouterBase(r),
    hostname: '',
    isOnline: false,
    name: r.name,
    supportedProtocols: r.supportedProtocols ?? {},
    syncStatus: 'SYNC_UNKNOWN',
    cost: null,
    noTraversal: null,
    disabled: r.disabled,
  };
}

/**
 * One of the client's `serviceEdgeRouters.edgeRouters` (`commonEdgeRouterProperties`, reference
 * `service_router.go getServiceEdgeRouters`): no id, no base fields; hostname and protocols are what
 * the router announced (none yet), offline, `SYNC_UNKNOWN`.
 */
export function serviceEdgeRouterDetail(r: EdgeRouterState) {
  return {
    hostname: r.hostname ?? '',
    isOnline: false,
    name: r.name,
    supportedProtocols: r.supportedProtocols ?? {},
    syncStatus: 'SYNC_UNKNOWN',
    cost: r.cost,
    noTraversal: r.noTraversal,
    disabled: r.disabled,
  };
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
        await deps().clientEdgeRouters.currentIdentityEdgeRouters(callerOf(req), listInput(req)),
        currentIdentityEdgeRouterDetail,
      ),
    'client.listServiceEdgeRouters': async (req) => {
      // Checked as ServiceAccessTokens says. The gateway does not pass this header on yet (its
      // pipeline forwards only `authorization` and `mfa-validation-code`), so it is absent for now.
      const page = await deps().clientEdgeRouters.serviceEdgeRouters(
        callerOf(req),
        pathId(req),
        req.headers['session-token'],
        listInput(req),
      );
      const { data, meta } = pageEnvelope(page, serviceEdgeRouterDetail);
      return reply.json({ data: { edgeRouters: data }, meta });
    },
  } satisfies OperationHandlersPart<'policy'>;
}
