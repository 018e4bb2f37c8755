import { type EdgeRouterState, edgeRouterState, eventTypes, inventoryEventTypes, subjects } from '@ziti/contracts';
import type { Db, EventSink, EventSubscription, Logger } from '@ziti/platform';
import { defaultAuthPolicyId, identityState } from '../domain/identity-service.ts';
import { type Identity, newIdentity } from '../domain/model.ts';
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
  constructor(private readonly sessions: Pick<SessionStore, 'deleteByIdentity'>) {}

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
    const current = await s.identities.get(router.id);
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
      updatedAt: routerTime > current.updatedAt ? routerTime : current.updatedAt,
    };
    await s.identities.update(next);
    await s.events.emit(eventTypes.identityUpdated.type, identityState(next), eventTypes.identityUpdated.version);
    return 'renamed';
  }

  async remove(s: RouterIdentityStores, identity: Identity): Promise<RouterIdentityChange> {
    await s.identities.delete(identity.id);
    await s.events.emit(eventTypes.identityDeleted.type, identityState(identity), eventTypes.identityDeleted.version);
    await this.sessions.deleteByIdentity(identity.id);
    return 'deleted';
  }
}

/** Consumes inventory's `edgeRouter.*` events into Router identities (at-least-once; idempotent). */
export function routerIdentityEventSubscription(
  routerIdentities: RouterIdentities,
  stores: (tx: Db) => RouterIdentityStores,
  logger: Logger,
): EventSubscription {
  return {
    subject: `${subjects.event('inventory', 'edgeRouter')}.>`,
    durable: 'auth-router-identities',
    handle: async (tx, event) => {
      const parsed = edgeRouterState.safeParse(event.data);
      if (!parsed.success) {
        logger.error({ eventId: event.id, type: event.type }, 'edge router event with an unknown shape; skipped');
        return;
      }
      const change = await routerIdentities.apply(
        stores(tx),
        parsed.data,
        event.type === inventoryEventTypes.edgeRouterDeleted.type,
      );
      if (change !== 'unchanged') logger.info({ routerId: parsed.data.id, change }, 'router identity');
    },
  };
}
