import { type IntegrityResult, policyEventTypes } from '@ziti/contracts';
import type { EventSink } from '@ziti/platform/event-sink';

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
 * Above this many changed pairs in one change, access changes are announced as
 * `identityAccess.bulkChanged` (which identities to read again) instead of one event per identity.
 */
export const accessEventPairLimit = 10_000;

/**
 * A service policy edit whose identities × services (before and after) exceed this is not compared
 * pair by pair: its identities are announced in bulk. A policy that selects everything in a network
 * of 10,000 identities and 1,000 services spans 10 million pairs; its links are 11,000 rows.
 */
export const exactAccessPairLimit = 250_000;

/** Identities per `identityAccess.bulkChanged` event (an event stays far below NATS's 1 MB payload). */
export const bulkEventIdentityLimit = 5_000;

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
  /** Keeps the access of the scope as it is now, for `accessChanges` after a relink. */
  captureAccess(scope: AccessScope): Promise<void>;
  /** The pairs of the captured scope whose access differs from the capture. */
  accessChanges(): Promise<AccessChanges>;
  /** Every link from scratch; returns the identities whose services may have changed. */
  rebuildAll(): Promise<string[]>;
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
    await links.captureAccess({ identityIds: [identityId] });
    await links.relinkIdentity(identityId);
    await this.announce(links, events, await links.accessChanges());
  }

  async serviceChanged(links: AccessLinks, events: EventSink, serviceId: string): Promise<void> {
    await links.lock();
    await links.captureAccess({ serviceIds: [serviceId] });
    await links.relinkService(serviceId);
    await this.announce(links, events, await links.accessChanges());
    // Its name, configs or other fields may have changed for everyone who sees it.
    await links.markServiceUpdates({ kind: 'service', id: serviceId });
  }

  async edgeRouterChanged(links: AccessLinks, edgeRouterId: string): Promise<void> {
    await links.lock();
    await links.relinkEdgeRouter(edgeRouterId);
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

  /**
   * A policy was created, changed or deleted (its row is already written or gone). A service
   * policy can change the access of its identities to its services only (before or after the edit);
   * past `exactAccessPairLimit` of those pairs they are not compared and its identities are
   * announced to be read again.
   */
  async policyChanged(links: AccessLinks, events: EventSink, kind: PolicyKind, policyId: string): Promise<Touched> {
    await links.lock();
    if (kind !== 'service') return links.relinkPolicy(kind, policyId);
    const scope = await links.servicePolicyScope(policyId);
    const span = scope.identities.length * scope.services.length;
    const exact = span <= exactAccessPairLimit;
    if (exact) await links.captureAccess({ identityIds: scope.identities, serviceIds: scope.services });
    const touched = await links.relinkPolicy(kind, policyId);
    const changed = exact ? await links.accessChanges() : { pairs: span, identityIds: scope.identities, changes: null };
    await this.announce(links, events, changed, policyId);
    // The posture queries of its identities' services follow the checks it names.
    if ((touched.postureChecks ?? []).length > 0)
      await links.markServiceUpdates({ kind: 'identities', ids: touched.identities });
    return touched;
  }

  /** Everything again from scratch (after a read model was rebuilt). */
  async rebuild(links: AccessLinks, events: EventSink): Promise<void> {
    await links.lock();
    await this.announceRebuilt(links, events, await links.rebuildAll());
  }

  private async announceRebuilt(links: AccessLinks, events: EventSink, identityIds: string[]) {
    if (identityIds.length === 0) return;
    await this.announce(links, events, { pairs: identityIds.length, identityIds, changes: null });
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
      for (let i = 0; i < changed.identityIds.length; i += bulkEventIdentityLimit) {
        const identityIds = changed.identityIds.slice(i, i + bulkEventIdentityLimit);
        await events.emit(def, def.schema.parse({ identityIds, pairs: changed.pairs, policyId: policyId ?? null }));
      }
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
      await events.emit(def, def.schema.parse({ id, identityId: id, services }));
    }
  }

  /** The integrity check: every derived table against a computation from scratch; fixing rebuilds. */
  async check(links: AccessLinks, events: EventSink, fix: boolean): Promise<IntegrityResult[]> {
    await links.lock();
    const differences = await links.differences();
    if (fix && differences.length > 0) await this.announceRebuilt(links, events, await links.rebuildAll());
    return differences.map((d) => ({
      description: `derived ${d.table}: ${d.missing} row(s) missing and ${d.extra} extra against a computation from scratch`,
      fixed: fix,
    }));
  }
}
