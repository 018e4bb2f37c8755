import type { ListInput, ListPage } from '@ziti/platform/list-page';
import type { EdgeRouterWithPresence } from '../read-models/read-models.ports.ts';

/** Edge routers as the client API shows them to their user, from the derived tables (docs/adr/0009). */
export interface ClientEdgeRouterStore {
  /**
   * Live, verified (enrolled) edge routers: those the identity reaches through its edge-router
   * policies (`identity_edge_routers`), or every one when `identityId` is undefined.
   */
  verifiedEdgeRouters(identityId: string | undefined, input: ListInput): Promise<ListPage<EdgeRouterWithPresence>>;
  /** A live service the identity may see: any for an admin, else one it may dial or bind (`identity_services`). */
  serviceVisible(serviceId: string, identityId: string, isAdmin: boolean): Promise<boolean>;
  /** Live edge routers both in the identity's edge-router policies and the service's service-edge-router policies. */
  sharedEdgeRouters(identityId: string, serviceId: string, input: ListInput): Promise<ListPage<EdgeRouterWithPresence>>;
}

export type ClientEdgeRouterReader = <T>(fn: (store: ClientEdgeRouterStore) => Promise<T>) => Promise<T>;

/**
 * The optional `session-token` header of client `GET /services/{id}/edge-routers`. In the reference
 * (1.1.9 `controller/internal/routes/service_router.go listClientEdgeRouters`, `controller/env/appenv.go
 * ValidateServiceAccessToken`) it is a *service access token*: a JWT the controller signs when an
 * OIDC API session creates a session. When the header is present it must be valid — signed by a key
 * of this controller (or a peer), audience `openziti` (or the legacy native one), token type `s`,
 * `apiSessionId` equal to the caller's API session, and not revoked (neither the token id nor its
 * identity since it was issued) — else the request is 401 UNAUTHORIZED with the reason as cause,
 * before the service is even looked up. A valid token changes nothing in the answer: the routers
 * are always those of the calling identity and the service. An absent or empty header is ignored.
 */
export interface ServiceAccessTokens {
  /** Why `token` does not authorise requests of API session `apiSessionId`; undefined when it does. */
  rejection(token: string, apiSessionId: string): Promise<string | undefined>;
}
