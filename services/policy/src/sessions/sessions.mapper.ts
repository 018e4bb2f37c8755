import { presenceShown } from '@ziti/contracts';
import type { EdgeRouterWithPresence } from '../read-models/read-models.ports.ts';
import type { FailedServiceRequest, SessionView } from './sessions.domain.ts';

const ref = (entity: string, id: string, name?: string) => ({
  id,
  ...(name === undefined ? {} : { name }),
  entity,
  _links: { self: { href: `./${entity}/${id}` } },
});

/**
 * A session's edge router (spec `sessionEdgeRouter`, ZITI-FACTS §10.1; reference `session_api_model.go
 * getSessionEdgeRouters`): every shared router, online or not, with `hostname`, `isOnline`,
 * `syncStatus` and `supportedProtocols` from the router's state (`presenceShown`: what an
 * online router announced; an offline one shows none); `urls` repeats `supportedProtocols` for old SDKs.
 */
function sessionEdgeRouter(r: EdgeRouterWithPresence) {
  const presence = presenceShown(r.presence);
  return {
    name: r.name,
    hostname: presence.hostname,
    isOnline: presence.isOnline,
    syncStatus: presence.syncStatus,
    supportedProtocols: presence.supportedProtocols,
    urls: presence.supportedProtocols,
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

/** One of an identity's refused requests (`/identities/{id}/failed-service-requests`). */
export function failedRequestDetail(f: FailedServiceRequest) {
  return {
    apiSessionId: f.apiSessionId,
    serviceId: f.serviceId,
    serviceName: f.serviceName,
    sessionType: f.sessionType,
    policyFailures: f.policyFailures,
    when: f.when.toISOString(),
  };
}
