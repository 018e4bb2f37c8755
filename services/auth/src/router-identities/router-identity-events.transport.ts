import { type EdgeRouterState, inventoryEventTypes } from '@ziti/contracts';
import type { Db, EventSink, EventSubscription, Logger } from '@ziti/platform';
import { on } from '@ziti/platform';
import type { RouterIdentities, RouterIdentityEventStores } from './router-identities.domain.ts';

/**
 * Consumes inventory's `edgeRouter.*` events into Router identities. Each router's last applied
 * event position is kept (`router_event_positions`), so an older router state that arrives after a
 * newer one (redelivery, replicas, a resync) changes nothing.
 */
export function routerIdentityEventSubscription(
  routerIdentities: RouterIdentities,
  stores: (tx: Db, events: EventSink) => RouterIdentityEventStores,
  logger: Logger,
): EventSubscription {
  const { edgeRouterCreated, edgeRouterUpdated, edgeRouterDeleted } = inventoryEventTypes;
  const apply = async (tx: Db, router: EdgeRouterState, position: number, deleted: boolean, events: EventSink) => {
    const change = await routerIdentities.applyEvent(stores(tx, events), router, position, deleted);
    if (change !== 'unchanged' && change !== 'stale') logger.info({ routerId: router.id, change }, 'router identity');
  };
  return {
    source: 'inventory',
    handlers: [edgeRouterCreated, edgeRouterUpdated, edgeRouterDeleted].map((def) =>
      on(def, (tx, router, event, events) => apply(tx, router, event.sequence, def === edgeRouterDeleted, events)),
    ),
  };
}
