import type { IntegrityResult } from '@ziti/contracts';

export type PolicyKind = 'service' | 'edgeRouter' | 'serviceEdgeRouter';

/** The entities whose links a change touched (before and after it). */
export interface Touched {
  identities: string[];
  services: string[];
  edgeRouters: string[];
}

/** One derived table that differs from a computation from scratch. */
export interface LinkDifference {
  table: string;
  /** Rows a computation from scratch has that the table lacks. */
  missing: number;
  /** Rows the table has that a computation from scratch does not. */
  extra: number;
}

/**
 * The derived links and access tables of one transaction (docs/adr/0009). Every method derives its
 * rows again from the current state of policies and read models — never by counting up and down —
 * so applying a change twice, late or out of order leaves the same rows.
 */
export interface AccessLinks {
  /** Serialises every derivation of this service: changes that touch links never interleave. */
  lock(): Promise<void>;
  relinkPolicy(kind: PolicyKind, policyId: string): Promise<Touched>;
  relinkIdentity(identityId: string): Promise<void>;
  relinkService(serviceId: string): Promise<void>;
  relinkEdgeRouter(edgeRouterId: string): Promise<void>;
  refreshIdentityServices(identityIds: string[]): Promise<void>;
  refreshServiceAccess(serviceId: string): Promise<void>;
  refreshIdentityEdgeRouters(identityIds: string[]): Promise<void>;
  refreshEdgeRouterAccess(edgeRouterId: string): Promise<void>;
  refreshServiceEdgeRouters(serviceIds: string[]): Promise<void>;
  rebuildAll(): Promise<void>;
  differences(): Promise<LinkDifference[]>;
}

/**
 * Who may reach what, derived when something changes (ZITI-FACTS §6.3): a policy selects identities,
 * services and edge routers by their roles; an identity's services are those of the Dial/Bind
 * policies that select it; its edge routers those of its edge-router policies; a service's edge
 * routers those of its service-edge-router policies. Each change re-derives, under one lock, the
 * rows of the entities it touches from current state.
 */
export class AccessDerivation {
  async identityChanged(links: AccessLinks, identityId: string): Promise<void> {
    await links.lock();
    await links.relinkIdentity(identityId);
    await links.refreshIdentityServices([identityId]);
    await links.refreshIdentityEdgeRouters([identityId]);
  }

  async serviceChanged(links: AccessLinks, serviceId: string): Promise<void> {
    await links.lock();
    await links.relinkService(serviceId);
    await links.refreshServiceAccess(serviceId);
    await links.refreshServiceEdgeRouters([serviceId]);
  }

  async edgeRouterChanged(links: AccessLinks, edgeRouterId: string): Promise<void> {
    await links.lock();
    await links.relinkEdgeRouter(edgeRouterId);
    await links.refreshEdgeRouterAccess(edgeRouterId);
  }

  /** A policy was created, changed or deleted (its row is already written or gone). */
  async policyChanged(links: AccessLinks, kind: PolicyKind, policyId: string): Promise<Touched> {
    await links.lock();
    const touched = await links.relinkPolicy(kind, policyId);
    if (kind === 'service') await links.refreshIdentityServices(touched.identities);
    if (kind === 'edgeRouter') await links.refreshIdentityEdgeRouters(touched.identities);
    if (kind === 'serviceEdgeRouter') await links.refreshServiceEdgeRouters(touched.services);
    return touched;
  }

  /** Everything again from scratch (after a read model was rebuilt). */
  async rebuild(links: AccessLinks): Promise<void> {
    await links.lock();
    await links.rebuildAll();
  }

  /** The integrity check: every derived table against a computation from scratch; fixing rebuilds. */
  async check(links: AccessLinks, fix: boolean): Promise<IntegrityResult[]> {
    await links.lock();
    const differences = await links.differences();
    if (fix && differences.length > 0) await links.rebuildAll();
    return differences.map((d) => ({
      description: `derived ${d.table}: ${d.missing} row(s) missing and ${d.extra} extra against a computation from scratch`,
      fixed: fix,
    }));
  }
}
