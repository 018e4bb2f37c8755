import type { EdgeRouterState, IdentityState, ServiceState } from '@ziti/contracts';
import type { PolicyKind, Touched } from '../access/access.ports.ts';
import type { PostureCheckService } from '../posture/posture-checks.domain.ts';
import type { EntityReadModel } from '../read-models/read-models.ports.ts';
import type { PolicyService } from '../policies/policies.domain.ts';

/** One identity × service pair with access (a row of `identity_services`). */
export interface AccessPair {
  identityId: string;
  serviceId: string;
  dial: boolean;
  bind: boolean;
}

/** An entity and an edge router it may use (a row of `identity_edge_routers` or `service_edge_routers`). */
export interface RouterLink {
  id: string;
  edgeRouterId: string;
}

/** A posture check a service policy applies to a service it selects (the policy's type as linked). */
export interface PostureLink {
  serviceId: string;
  policyId: string;
  type: 'Dial' | 'Bind';
  postureCheckId: string;
}

/** Whose names a what-if answer shows. */
export type WhatIfNamed = 'identities' | 'services' | 'edgeRouters' | 'postureChecks' | 'servicePolicies';

/**
 * Reads of what the policy engine derived (the links and the access views, docs/adr/0009, 0011) in
 * the state the sandbox is in. Every read names ids on at least one side, and answers at most
 * `limit` rows (one more tells the caller there were more).
 */
export interface WhatIfProbe {
  /** The entities a policy links now (empty when it does not exist). */
  policyLinks(kind: PolicyKind, policyId: string): Promise<Touched>;
  /** The service policies that link a posture check now. */
  postureCheckPolicies(postureCheckId: string): Promise<string[]>;
  accessPairs(of: { identityIds?: string[]; serviceIds?: string[] }, limit: number): Promise<AccessPair[]>;
  identityRouters(of: { identityIds?: string[]; edgeRouterIds?: string[] }, limit: number): Promise<RouterLink[]>;
  serviceRouters(of: { serviceIds?: string[]; edgeRouterIds?: string[] }, limit: number): Promise<RouterLink[]>;
  postureLinks(of: { policyIds?: string[]; serviceIds?: string[] }, limit: number): Promise<PostureLink[]>;
  /** Names of the existing entities among `ids`. */
  names(of: WhatIfNamed, ids: string[]): Promise<Map<string, string>>;
}

/** The read models whose role attributes a what-if may propose, and what derives from each. */
export interface ProposableEntity<S extends { id: string; roleAttributes: string[] }> {
  model: EntityReadModel<S>;
  /** What runs when the owner's new state of the entity was applied (its links and access again). */
  changed: (id: string) => Promise<void>;
}

/**
 * The policy engine bound to one sandbox transaction: the real domain services and the read models'
 * update path, writing into a transaction that is always rolled back.
 */
export interface WhatIfEngine {
  policies: Record<PolicyKind, PolicyService>;
  postureChecks: PostureCheckService;
  identities: ProposableEntity<IdentityState>;
  services: ProposableEntity<ServiceState>;
  edgeRouters: ProposableEntity<EdgeRouterState>;
  probe: WhatIfProbe;
  /**
   * Undoes every change made through the engine so far (the transaction goes on, in the state it
   * had before them, under the derivation lock it took first).
   */
  rewind(): Promise<void>;
}

/**
 * Runs `fn` on an engine whose transaction is rolled back afterwards whatever happens: no row, no
 * outbox event, no notification and no relay kick leaves it. It holds the derivation lock from its
 * start, so no other derivation moves the links while it runs.
 */
export type WhatIfSandbox = <T>(fn: (engine: WhatIfEngine) => Promise<T>) => Promise<T>;
