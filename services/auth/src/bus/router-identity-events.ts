import { type EdgeRouterState, edgeRouterState, eventTypes, inventoryEventTypes } from '@ziti/contracts';
import type { Db, EventEnvelope, EventSink, EventSubscription, Logger } from '@ziti/platform';
import { parseEventData, queryRows } from '@ziti/platform';
import { defaultAuthPolicyId, identityState } from '../domain/identity-service.ts';
import { emitApiSessionDeleted } from '../domain/api-session-events.ts';
import { type Identity, newIdentity, recordedDisabled } from '../domain/model.ts';
import type { IdentityStore, SessionStore } from '../domain/ports.ts';

export const routerIdentityType = 'Router';

export interface RouterIdentityStores {
  identities: Pick<IdentityStore, 'get' | 'insert' | 'update' | 'delete' | 'findByName'>;
  events: EventSink;
}

export type RouterIdentityChange = 'created' | 'renamed' | 'deleted' | 'unchanged' | 'stale';

/**
 * The Router-type identity of a tunneler-enabled edge router (ZITI-FACTS §7.6): id = router id,
 * name = router name; it follows the router's renames and leaves with its tunneling or the
 * router. inventory owns routers, so this is driven by its `edgeRouter.*` events; the identity's
 * `updatedAt` carries the router's, so an older router state never overwrites a newer one.
 */
export class RouterIdentities {
  constructor(private readonly sessions: Pick<SessionStore, 'endByIdentity'>) {}

  /** The name the identity should have: the router's, unless another identity already has it. */
  private async nameFor(s: RouterIdentityStores, router: EdgeRouterState): Promise<string> {
    const holder = await s.identities.findByName(router.name);
    return holder && holder.id !== router.id ? `${router.name}-${router.id}` : router.name;
  }

  /**
   * Brings the router's identity in line with a router state. `force` (integrity repair) applies
   * it whatever the identity's own `updatedAt`.
   */
  async apply(
    s: RouterIdentityStores,
    router: EdgeRouterState,
    deleted: boolean,
    force = false,
  ): Promise<RouterIdentityChange> {
    const current = await s.identities.get(router.id, { forUpdate: true });
    const routerTime = new Date(router.updatedAt);
    if (current && current.typeId !== routerIdentityType) return 'unchanged';
    if (current && !force && routerTime < current.updatedAt) return 'stale';
    if (deleted || !router.isTunnelerEnabled) return current ? this.remove(s, current) : 'unchanged';
    const name = await this.nameFor(s, router);
    if (!current) {
      const identity = newIdentity({
        id: router.id,
        name,
        typeId: routerIdentityType,
        authPolicyId: defaultAuthPolicyId,
        // When the router became tunneler-enabled (the router's clock, like every later change).
        createdAt: routerTime,
      });
      await s.identities.insert(identity);
      await s.events.emit(eventTypes.identityCreated.type, identityState(identity), eventTypes.identityCreated.version);
      return 'created';
    }
    if (current.name === name) return 'unchanged';
    const next: Identity = {
      ...current,
      name,
      // A timed disable that passed ends with this change (the sweeper would record it otherwise).
      disabled: recordedDisabled(current, new Date()),
      updatedAt: routerTime > current.updatedAt ? routerTime : current.updatedAt,
    };
    await s.identities.update(next);
    await s.events.emit(eventTypes.identityUpdated.type, identityState(next), eventTypes.identityUpdated.version);
    return 'renamed';
  }

  /**
   * Deletes the Router identity and ends its API sessions, announcing them in the same unit of
   * work. The sessions end first (their tokens stop working; api-session-events.ts). This runs in
   * the caller's transaction, so nothing can drop their tombstones after the commit: the sweeper
   * does, once their grace passed, silently when the identity is gone (its deletion committed with
   * these announcements), announcing them when it still exists (the transaction rolled back). A
   * retry announces them itself: `endByIdentity` answers the sessions it ended before for the same
   * reason.
   */
  async remove(s: RouterIdentityStores, identity: Identity): Promise<RouterIdentityChange> {
    const ended = await this.sessions.endByIdentity(identity.id, 'routerRemoved');
    const endedAt = new Date();
    await s.identities.delete(identity.id);
    await s.events.emit(eventTypes.identityDeleted.type, identityState(identity), eventTypes.identityDeleted.version);
    for (const session of ended) await emitApiSessionDeleted(s.events, session, 'routerRemoved', endedAt);
    return 'deleted';
  }
}

/**
 * Consumes inventory's `edgeRouter.*` events into Router identities. Each router's last applied
 * event position is kept (`router_event_positions`), so an older router state that arrives after a
 * newer one (redelivery, replicas, a resync) changes nothing.
 */
export function routerIdentityEventSubscription(
  routerIdentities: RouterIdentities,
  stores: (tx: Db, events: EventSink) => RouterIdentityStores,
  logger: Logger,
): EventSubscription {
  const handle = async (tx: Db, event: EventEnvelope, events: EventSink) => {
    const router = parseEventData(edgeRouterState, event);
    const newer = await queryRows(
      tx,
      `insert into router_event_positions (router_id, position) values ($1, $2)
       on conflict (router_id) do update set position = excluded.position
         where router_event_positions.position < excluded.position
       returning router_id`,
      [router.id, event.sequence],
    );
    if (newer.length === 0) return;
    const deleted = event.type === inventoryEventTypes.edgeRouterDeleted.type;
    // The position decides the order, not the router's clock.
    const change = await routerIdentities.apply(stores(tx, events), router, deleted, true);
    if (change !== 'unchanged') logger.info({ routerId: router.id, change }, 'router identity');
  };
  return {
    source: 'inventory',
    handlers: [
      inventoryEventTypes.edgeRouterCreated,
      inventoryEventTypes.edgeRouterUpdated,
      inventoryEventTypes.edgeRouterDeleted,
    ].map((def) => ({ type: def.type, handle })),
  };
}
