import { type IntegrityResult, policyEventTypes } from '@ziti/contracts';
import type { EventSink } from '@ziti/platform';

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
 * What one synchronisation of identity_services changed: how many pairs, whose, and the pairs
 * themselves unless there are more than `accessEventPairLimit` (then null).
 */
export interface AccessChanges {
  pairs: number;
  identityIds: string[];
  changes: AccessChange[] | null;
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
 * Above this many changed pairs in one change, access changes are announced as one
 * `identityAccess.bulkChanged` (which identities to read again) instead of one event per identity:
 * an `#all` policy over a large network changes millions of pairs.
 */
export const accessEventPairLimit = 10_000;

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
  /** Relinks a posture check to the service policies selecting it; returns those before and after. */
  relinkPostureCheck(postureCheckId: string): Promise<string[]>;
  /** These return the identity × service pairs whose access changed. */
  refreshIdentityServices(identityIds: string[]): Promise<AccessChanges>;
  refreshServiceAccess(serviceId: string): Promise<AccessChanges>;
  refreshIdentityEdgeRouters(identityIds: string[]): Promise<void>;
  refreshEdgeRouterAccess(edgeRouterId: string): Promise<void>;
  refreshServiceEdgeRouters(serviceIds: string[]): Promise<void>;
  rebuildAll(): Promise<AccessChanges>;
  differences(): Promise<LinkDifference[]>;
  /** Records that the service view of the identities in scope changed now. */
  markServiceUpdates(scope: ServiceUpdateScope): Promise<void>;
}

/**
 * Who may reach what, derived when something changes (ZITI-FACTS §6.3): a policy selects identities,
 * services and edge routers by their roles; an identity's services are those of the Dial/Bind
 * policies that select it; its edge routers those of its edge-router policies; a service's edge
 * routers those of its service-edge-router policies. Each change re-derives, under one lock, the
 * rows of the entities it touches from current state.
 */
export class AccessDerivation {
  async identityChanged(links: AccessLinks, events: EventSink, identityId: string): Promise<void> {
    await links.lock();
    await links.relinkIdentity(identityId);
    await this.announce(links, events, await links.refreshIdentityServices([identityId]));
    await links.refreshIdentityEdgeRouters([identityId]);
  }

  async serviceChanged(links: AccessLinks, events: EventSink, serviceId: string): Promise<void> {
    await links.lock();
    await links.relinkService(serviceId);
    await this.announce(links, events, await links.refreshServiceAccess(serviceId));
    await links.refreshServiceEdgeRouters([serviceId]);
    // Its name, configs or other fields may have changed for everyone who sees it.
    await links.markServiceUpdates({ kind: 'service', id: serviceId });
  }

  async edgeRouterChanged(links: AccessLinks, edgeRouterId: string): Promise<void> {
    await links.lock();
    await links.relinkEdgeRouter(edgeRouterId);
    await links.refreshEdgeRouterAccess(edgeRouterId);
  }

  /**
   * A posture check was created, changed or deleted (its row is already written or gone): its links
   * to the service policies that select it, and the service views (posture queries) of their identities.
   */
  async postureCheckChanged(links: AccessLinks, postureCheckId: string): Promise<void> {
    await links.lock();
    const policyIds = await links.relinkPostureCheck(postureCheckId);
    if (policyIds.length > 0) await links.markServiceUpdates({ kind: 'servicePolicies', ids: policyIds });
  }

  /** A config, config type or identity's overrides changed: the service lists that show it moved. */
  async serviceViewChanged(links: AccessLinks, scope: ServiceUpdateScope): Promise<void> {
    await links.markServiceUpdates(scope);
  }

  /** A policy was created, changed or deleted (its row is already written or gone). */
  async policyChanged(links: AccessLinks, events: EventSink, kind: PolicyKind, policyId: string): Promise<Touched> {
    await links.lock();
    const touched = await links.relinkPolicy(kind, policyId);
    if (kind === 'service') {
      await this.announce(links, events, await links.refreshIdentityServices(touched.identities), policyId);
      // The posture queries of its identities' services follow the checks it names.
      if ((touched.postureChecks ?? []).length > 0)
        await links.markServiceUpdates({ kind: 'identities', ids: touched.identities });
    }
    if (kind === 'edgeRouter') await links.refreshIdentityEdgeRouters(touched.identities);
    if (kind === 'serviceEdgeRouter') await links.refreshServiceEdgeRouters(touched.services);
    return touched;
  }

  /** Everything again from scratch (after a read model was rebuilt). */
  async rebuild(links: AccessLinks, events: EventSink): Promise<void> {
    await links.lock();
    await this.announce(links, events, await links.rebuildAll());
  }

  /**
   * Access gained, lost or changed: one `identityAccess.changed` per identity with the pairs that
   * changed (or one bulk event past `accessEventPairLimit`), and the identities' service views move.
   */
  private async announce(links: AccessLinks, events: EventSink, changed: AccessChanges, policyId?: string) {
    if (changed.pairs === 0) return;
    await links.markServiceUpdates({ kind: 'identities', ids: changed.identityIds });
    if (changed.changes === null) {
      const def = policyEventTypes.identityAccessBulkChanged;
      await events.emit(
        def.type,
        def.schema.parse({ identityIds: changed.identityIds, pairs: changed.pairs, policyId: policyId ?? null }),
        def.version,
      );
      return;
    }
    const byIdentity = new Map<string, AccessChange[]>();
    for (const c of changed.changes) {
      const list = byIdentity.get(c.identityId);
      if (list) list.push(c);
      else byIdentity.set(c.identityId, [c]);
    }
    const def = policyEventTypes.identityAccessChanged;
    for (const [id, list] of byIdentity) {
      const services = list.map((c) => ({ serviceId: c.serviceId, dial: c.dial, bind: c.bind }));
      await events.emit(def.type, def.schema.parse({ id, identityId: id, services }), def.version);
    }
  }

  /** The integrity check: every derived table against a computation from scratch; fixing rebuilds. */
  async check(links: AccessLinks, events: EventSink, fix: boolean): Promise<IntegrityResult[]> {
    await links.lock();
    const differences = await links.differences();
    if (fix && differences.length > 0) await this.announce(links, events, await links.rebuildAll());
    return differences.map((d) => ({
      description: `derived ${d.table}: ${d.missing} row(s) missing and ${d.extra} extra against a computation from scratch`,
      fixed: fix,
    }));
  }
}
