/** The three policy kinds, whose links the derivation keeps (each kind's folder: service-policies/, …). */
export type PolicyKind = 'service' | 'edgeRouter' | 'serviceEdgeRouter';

/** The entities whose links a change touched (before and after it). */
export interface Touched {
  identities: string[];
  services: string[];
  edgeRouters: string[];
  /** Service policies only: the posture checks the policy named before or after the change. */
  postureChecks?: string[];
}

/** One derived table that differs from a computation from scratch. */
export interface LinkDifference {
  table: string;
  /** Rows a computation from scratch has that the table lacks. */
  missing: number;
  /** Rows the table has that a computation from scratch does not. */
  extra: number;
}

/** One identity × service pair whose access changed: what it is now (both false: lost). */
export interface AccessChange {
  identityId: string;
  serviceId: string;
  dial: boolean;
  bind: boolean;
}

/**
 * Identity × service pairs whose access changed in one derivation: how many, whose, and the pairs
 * themselves unless there are more than `accessEventPairLimit` or they were not counted (then
 * null, and `pairs` is an upper bound).
 */
export interface AccessChanges {
  pairs: number;
  identityIds: string[];
  changes: AccessChange[] | null;
}

/** The pairs whose access a derivation may change: those of these identities and/or services. */
export interface AccessScope {
  identityIds?: string[];
  serviceIds?: string[];
}

/** Whose view of their services a change touched (`GET /current-api-session/service-updates`). */
export type ServiceUpdateScope =
  | { kind: 'identities'; ids: string[] }
  /** Every identity with access to the service. */
  | { kind: 'service'; id: string }
  /** Every identity with access to a service that uses the config. */
  | { kind: 'config'; id: string }
  /** Every identity with access to a service that uses a config of the type. */
  | { kind: 'configType'; id: string }
  /** Every identity the service policies select (their posture checks changed). */
  | { kind: 'servicePolicies'; ids: string[] }
  /** Every identity that sees any service. */
  | { kind: 'all' };

/**
 * The links of one transaction (docs/adr/0009, 0011). Every method derives its rows again from the
 * current state of policies and read models — never by counting up and down — so applying a change
 * twice, late or out of order leaves the same rows. Access (identity_services, identity_edge_routers,
 * service_edge_routers) is read from the links, so it can not drift from them.
 */
export interface AccessLinks {
  /** Serialises every derivation of this service: changes that touch links never interleave. */
  lock(): Promise<void>;
  relinkPolicy(kind: PolicyKind, policyId: string): Promise<Touched>;
  /** The identities and services a service policy links now or will link after `relinkPolicy`. */
  servicePolicyScope(policyId: string): Promise<{ identities: string[]; services: string[] }>;
  relinkIdentity(identityId: string): Promise<void>;
  relinkService(serviceId: string): Promise<void>;
  relinkEdgeRouter(edgeRouterId: string): Promise<void>;
  /** Relinks a posture check to the service policies selecting it; returns those before and after. */
  relinkPostureCheck(postureCheckId: string): Promise<string[]>;
  /**
   * Keeps the access of the scope as it is now, for `accessChanges` after a relink; `none`: the
   * caller knows the scope has none (an entity new to policy), so there is nothing to read.
   */
  captureAccess(scope: AccessScope, known?: { none?: boolean }): Promise<void>;
  /** The pairs of the captured scope whose access differs from the capture. */
  accessChanges(): Promise<AccessChanges>;
  /** Every link from scratch; returns the identities whose services may have changed. */
  rebuildAll(): Promise<string[]>;
  differences(): Promise<LinkDifference[]>;
  /** Records that the service view of the identities in scope changed now. */
  markServiceUpdates(scope: ServiceUpdateScope): Promise<void>;
}
