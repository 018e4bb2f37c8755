import type { EntityDetail, IdentityState, ServiceState } from '@ziti/contracts';
import type { ListInput, ListPage } from '@ziti/platform/list-page';
import type { PolicyKind } from '../access/access.ports.ts';
import type { PostureCheck } from '../posture/posture-checks.domain.ts';
import type { EdgeRouterWithPresence } from '../read-models/read-models.ports.ts';
import type { Policy } from '../policies/policies.domain.ts';
import type { Relation, RelationSource } from './relations.domain.ts';

/**
 * The derived link and access tables (docs/adr/0009) joined to the read models: related rows are
 * read, never computed from policies at read time. A pair the store does not know is a programming
 * error, not an API error.
 */
export interface RelationStore {
  /** The source is a live entity (tombstones do not count) or an existing policy. */
  exists(source: RelationSource, id: string): Promise<boolean>;
  identities(of: Relation, input: ListInput): Promise<ListPage<IdentityState>>;
  services(of: Relation, input: ListInput): Promise<ListPage<ServiceState>>;
  /** The related edge routers, each with its presence. */
  edgeRouters(of: Relation, input: ListInput): Promise<ListPage<EdgeRouterWithPresence>>;
  policies(kind: PolicyKind, of: Relation, input: ListInput): Promise<ListPage<Policy>>;
  /** Posture checks a service policy selects (its `service_policy_posture_checks` links). */
  postureChecks(of: Relation, input: ListInput): Promise<ListPage<PostureCheck>>;
}

export type RelationReader = <T>(fn: (store: RelationStore) => Promise<T>) => Promise<T>;

/**
 * The owners' management details of related entities, by id: auth's identities and inventory's
 * edge routers exactly as their `GET /identities/{id}` and `GET /edge-routers/{id}` answer them
 * (policy's read models hold only the entities' published state). Each answers those of the ids its
 * owner knows, in any order; an owner that can not be reached fails the call (an API error).
 */
export interface RelatedEntityDetails {
  identities(ids: string[]): Promise<EntityDetail[]>;
  edgeRouters(ids: string[]): Promise<EntityDetail[]>;
}
