import { type EdgeRouterState, edgeRouterLinks } from '@ziti/contracts';

/**
 * What policy's own reads show of edge routers (sessions, the client API's router lists, policy
 * advice), built from its read models. The association lists (`/services/{id}/identities`, …) show
 * identities and edge routers as their owners do (relations/relations.domain.ts `withOwnerDetails`).
 */

/** The base entity fields and links of an edge router, as every router shape has them. */
export function edgeRouterBase(r: EdgeRouterState) {
  return { id: r.id, createdAt: r.createdAt, updatedAt: r.updatedAt, tags: r.tags, _links: edgeRouterLinks(r.id) };
}
