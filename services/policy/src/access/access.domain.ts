import { type IntegrityResult, policyEventTypes } from '@ziti/contracts';
import type { EventSink } from '@ziti/platform/event-sink';
import type {
  AccessChange,
  AccessChanges,
  AccessLinks,
  PolicyKind,
  ServiceUpdateScope,
  Touched,
} from './access.ports.ts';

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
 * Who may reach what, derived when something changes (ZITI-FACTS §6.3): a policy selects identities,
 * services and edge routers by their roles; an identity's services are those of the Dial/Bind
 * policies that select it; its edge routers those of its edge-router policies; a service's edge
 * routers those of its service-edge-router policies. Each change re-derives, under one lock, the
 * rows of the entities it touches from current state.
 */
export class AccessDerivation {
  /**
   * An identity's row changed. An identity policy had no row of before (`fresh`) had no access:
   * nothing is captured to compare with, and every pair it has after the relink is new.
   */
  async identityChanged(
    links: AccessLinks,
    events: EventSink,
    identityId: string,
    change: { fresh?: boolean } = {},
  ): Promise<void> {
    await links.lock();
    await links.captureAccess({ identityIds: [identityId] }, { none: change.fresh === true });
    await links.relinkIdentity(identityId);
    await this.announce(links, events, await links.accessChanges());
  }

  /** A service's row changed (`fresh` as for an identity). */
  async serviceChanged(
    links: AccessLinks,
    events: EventSink,
    serviceId: string,
    change: { fresh?: boolean } = {},
  ): Promise<void> {
    await links.lock();
    await links.captureAccess({ serviceIds: [serviceId] }, { none: change.fresh === true });
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
