import type { EdgeRouterState, OperationRequest } from '@ziti/contracts';
import { type OperationHandlersPart, listInputOf, pageReply, reply } from '@ziti/platform';
import type { FailedServiceRequest, SessionService, SessionView } from '../domain/sessions.ts';
import { pathId } from './related-details.ts';
import { viewerOf } from './services.ts';

const ref = (entity: string, id: string, name?: string) => ({
  id,
  ...(name === undefined ? {} : { name }),
  entity,
  _links: { self: { href: `./${entity}/${id}` } },
});

/**
 * A session's edge router (spec `sessionEdgeRouter`, ZITI-FACTS §10.1). Routers do not connect to
 * this controller yet: offline, `SYNC_UNKNOWN` (as every router detail says); `urls` repeats
 * `supportedProtocols` for old SDKs.
 */
function sessionEdgeRouter(r: EdgeRouterState) {
  return {
    name: r.name,
    hostname: r.hostname,
    isOnline: false,
    syncStatus: 'SYNC_UNKNOWN',
    supportedProtocols: r.supportedProtocols,
    urls: r.supportedProtocols,
    cost: r.cost,
    noTraversal: r.noTraversal,
    disabled: r.disabled,
    appData: r.appData,
  };
}

/** A session detail (spec `sessionDetail`; the management one adds `servicePolicies`). */
export function sessionDetail(v: SessionView) {
  const s = v.session;
  return {
    id: s.id,
    createdAt: s.createdAt.toISOString(),
    updatedAt: s.updatedAt.toISOString(),
    tags: s.tags,
    _links: { self: { href: `./sessions/${s.id}` }, 'route-path': { href: `./sessions/${s.id}/route-path` } },
    apiSessionId: s.apiSessionId,
    apiSession: ref('api-sessions', s.apiSessionId),
    serviceId: s.serviceId,
    service: ref('services', s.serviceId, v.serviceName),
    identityId: s.identityId,
    type: s.type,
    token: s.token,
    edgeRouters: v.edgeRouters.map(sessionEdgeRouter),
    ...(v.servicePolicies
      ? { servicePolicies: v.servicePolicies.map((p) => ref('service-policies', p.id, p.name)) }
      : {}),
  };
}

function failedRequestDetail(f: FailedServiceRequest) {
  return {
    apiSessionId: f.apiSessionId,
    serviceId: f.serviceId,
    serviceName: f.serviceName,
    sessionType: f.sessionType,
    policyFailures: f.policyFailures,
    when: f.when.toISOString(),
  };
}

const callerOf = (req: OperationRequest) => ({ ...viewerOf(req), apiSessionId: req.caller!.apiSessionId });

/** Edge sessions on both APIs (ZITI-FACTS §10.1) and an identity's refused requests. */
export function sessionOperations(sessions: () => SessionService) {
  const list = async (req: OperationRequest) =>
    pageReply(await sessions().list(viewerOf(req), listInputOf(req)), sessionDetail);
  const remove = async (req: OperationRequest) => {
    await sessions().delete(viewerOf(req), pathId(req));
    return reply.empty();
  };
  return {
    'client.createSession': async (req) => {
      // A null `tags` (the spec lets it be null) is no tags, as an absent one.
      const { view } = await sessions().create(callerOf(req), { ...req.body, tags: req.body.tags ?? undefined });
      return reply.ok(sessionDetail(view), 201);
    },
    'client.listSessions': list,
    'client.detailSession': async (req) => reply.ok(sessionDetail(await sessions().get(viewerOf(req), pathId(req)))),
    'client.deleteSession': remove,
    'management.listSessions': list,
    'management.detailSession': async (req) =>
      reply.ok(sessionDetail(await sessions().get(viewerOf(req), pathId(req), true))),
    'management.deleteSession': remove,
    'management.detailSessionRoutePath': async (req) =>
      reply.ok({ routePath: await sessions().routePath(viewerOf(req), pathId(req)) }),
    'management.getIdentityFailedServiceRequests': async (req) =>
      reply.ok((await sessions().failedRequests(pathId(req))).map(failedRequestDetail)),
  } satisfies OperationHandlersPart<'policy'>;
}
