import type { ServiceState } from '@ziti/contracts';
import type { ListInput, ListPage } from '@ziti/platform/list-page';
import type { EdgeRouterWithPresence } from '../read-models/read-models.ports.ts';
import type { FailedServiceRequest, Session, SessionType, SessionViewer } from './sessions.domain.ts';

export interface SessionStore {
  /**
   * Creates the session unless its API session has ended ('ended'), learning the API session from
   * the request when policy has not heard of it yet (a login announces nothing: docs/adr/0017);
   * answers the session of that API session, service and type that already exists instead of a
   * second one.
   */
  createIfLive(session: Session): Promise<Session | 'ended'>;
  findFor(apiSessionId: string, serviceId: string, type: SessionType): Promise<Session | undefined>;
  get(id: string): Promise<Session | undefined>;
  list(input: ListInput, scope: { identityId?: string }): Promise<ListPage<Session>>;
  delete(id: string): Promise<boolean>;
  serviceNames(ids: string[]): Promise<Map<string, string>>;
  /**
   * Live edge routers in both the identity's edge-router policies and the service's
   * service-edge-router policies, each with its presence, connected first.
   */
  sharedEdgeRouters(identityId: string, serviceId: string, limit: number): Promise<EdgeRouterWithPresence[]>;
  /**
   * What a creation decides on (`decideCreation`), read at once; undefined when the service is not
   * visible to the viewer: the viewer's access to the service, the session its API session already
   * has for the service and type (`reuse`), the first `routerLimit` shared edge routers, and whether
   * a granting policy of the type names posture checks. Reads only.
   */
  creationFacts(
    viewer: SessionViewer,
    serviceId: string,
    reuse: { apiSessionId: string; type: SessionType },
    routerLimit: number,
  ): Promise<CreationFacts | undefined>;
  /**
   * What `authorizeSessionUse` decides on, read in one statement: the session with `token` and the
   * current facts of its identity, service and the router it is presented through; undefined when no
   * session has the token.
   */
  useFacts(token: string, routerId: string): Promise<SessionUseFacts | undefined>;
  recordFailure(identityId: string, request: FailedServiceRequest, keep: number): Promise<void>;
  failures(identityId: string): Promise<FailedServiceRequest[]>;
  identityExists(identityId: string): Promise<boolean>;
}

/** What a session creation decides on, as the store read it (see `SessionStore.creationFacts`). */
export interface CreationFacts {
  /** The service and which types the viewer's service policies permit. */
  access: { service: ServiceState; dial: boolean; bind: boolean };
  existing?: Session;
  edgeRouters: EdgeRouterWithPresence[];
  /** A service policy of the requested type that grants the service names posture checks. */
  postureChecked: boolean;
}

export type SessionWork = <T>(fn: (store: SessionStore) => Promise<T>) => Promise<T>;

/**
 * An edge session presented through a router (a Bind or Dial a router asks the controller about),
 * with the facts the reference's checks read now (ziti `controller/handler_edge_ctrl/common.go`).
 */
export interface SessionUseFacts {
  session: Pick<Session, 'id' | 'apiSessionId' | 'identityId' | 'serviceId' | 'type'>;
  /** Its API session has ended (its sessions are removed with that end; this one is on its way out). */
  apiSessionEnded: boolean;
  /** Its identity is live in policy's read model (a deleted identity's API sessions end). */
  identityLive: boolean;
  identityIsAdmin: boolean;
  /** Its service is live in policy's read model. */
  serviceLive: boolean;
  /** The identity reaches the router through an edge-router policy (its links now). */
  identityReachesRouter: boolean;
  /** The service reaches the router through a service-edge-router policy (its links now). */
  serviceReachesRouter: boolean;
  /** A service policy of the session's type selects the identity and the service now. */
  typePermitted: boolean;
}

/**
 * The routers of edge sessions' live circuits, as the router edge (`fabric`) holds them: session id
 * → the router ids of its circuit's path. Undefined when no router edge answers (none deployed, or
 * none up): then no router holds a control channel to this controller, so no circuit exists.
 */
export interface CircuitPaths {
  routePaths(sessionIds: string[]): Promise<Record<string, string[]> | undefined>;
}
