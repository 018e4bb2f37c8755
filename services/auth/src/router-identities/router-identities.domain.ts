import { type EdgeRouterState, eventTypes } from '@ziti/contracts';
import type { EventSink } from '@ziti/platform/event-sink';
import { SessionEnding } from '../api-sessions/session-ending.domain.ts';
import { defaultAuthPolicyId, identityState } from '../identities/identities.domain.ts';
import { type Identity, newIdentity, recordedDisabled } from '../shared/model.domain.ts';
import type { IdentityStore } from '../identities/identities.ports.ts';
import type { SessionStore } from '../shared/stores.ports.ts';

export const routerIdentityType = 'Router';

export interface RouterIdentityStores {
  identities: Pick<IdentityStore, 'get' | 'insert' | 'update' | 'delete' | 'findByName'>;
  events: EventSink;
}

export type RouterIdentityChange = 'created' | 'renamed' | 'deleted' | 'unchanged' | 'stale';

/**
 * The last applied `edgeRouter.*` event position of each router (`router_event_positions`), kept
 * in the transaction that applies the event.
 */
export interface RouterEventPositionStore {
  /** Records `position` for the router if it is newer than the one kept; whether it was. */
  advance(routerId: string, position: number): Promise<boolean>;
}

export interface RouterIdentityEventStores extends RouterIdentityStores {
  positions: RouterEventPositionStore;
}

/**
 * The Router-type identity of a tunneler-enabled edge router (ZITI-FACTS §7.6): id = router id,
 * name = router name; it follows the router's renames and leaves with its tunneling or the
 * router. inventory owns routers, so this is driven by its `edgeRouter.*` events; the identity's
 * `updatedAt` carries the router's, so an older router state never overwrites a newer one.
 */
export class RouterIdentities {
  constructor(private readonly sessions: Pick<SessionStore, 'endByIdentity' | 'forget'>) {}

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
      await s.events.emit(eventTypes.identityCreated, identityState(identity));
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
    await s.events.emit(eventTypes.identityUpdated, identityState(next));
    return 'renamed';
  }

  /**
   * Applies one of inventory's `edgeRouter.*` events: the position decides the order, not the
   * router's clock, so an older router state that arrives after a newer one (redelivery, replicas,
   * a resync) changes nothing ('stale').
   */
  async applyEvent(
    s: RouterIdentityEventStores,
    router: EdgeRouterState,
    position: number,
    deleted: boolean,
  ): Promise<RouterIdentityChange> {
    if (!(await s.positions.advance(router.id, position))) return 'stale';
    return this.apply(s, router, deleted, true);
  }

  /**
   * Deletes the Router identity and ends its API sessions, announcing them in the same unit of
   * work (`SessionEnding.within`): they end before the commit (their tokens stop working;
   * api-sessions/api-session-events.domain.ts). This runs in the caller's transaction, so nothing
   * can drop their tombstones after the commit: the sweeper does, once their grace passed, silently
   * when the identity is gone (its deletion committed with these announcements), announcing them
   * when it still exists (the transaction rolled back). A retry announces them itself:
   * `endByIdentity` answers the sessions it ended before for the same reason.
   */
  async remove(s: RouterIdentityStores, identity: Identity): Promise<RouterIdentityChange> {
    await s.identities.delete(identity.id);
    await s.events.emit(eventTypes.identityDeleted, identityState(identity));
    await new SessionEnding(this.sessions).within(s.events, { identityId: identity.id }, 'routerRemoved');
    return 'deleted';
  }
}
