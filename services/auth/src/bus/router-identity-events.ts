import { edgeRouterState, inventoryEventTypes } from '@ziti/contracts';
import type { Db, EventEnvelope, EventSink, EventSubscription, Logger } from '@ziti/platform';
import { parseEventData } from '@ziti/platform';
import type { RouterIdentities, RouterIdentityEventStores } from '../domain/router-identities.ts';

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
  const handle = async (tx: Db, event: EventEnvelope, events: EventSink) => {
    const router = parseEventData(edgeRouterState, event);
    const deleted = event.type === inventoryEventTypes.edgeRouterDeleted.type;
    const change = await routerIdentities.applyEvent(stores(tx, events), router, event.sequence, deleted);
    if (change !== 'unchanged' && change !== 'stale') logger.info({ routerId: router.id, change }, 'router identity');
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
