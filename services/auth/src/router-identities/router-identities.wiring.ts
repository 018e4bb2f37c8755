import { type Db, type EventSink, createUnitOfWork, ownerEntityStates } from '@ziti/platform';
import { PgIdentityStore } from '../identities/identities.store.ts';
import type { AuthCore } from '../shared/core.wiring.ts';
import { PgRouterEventPositions } from './router-event-positions.store.ts';
import { RouterIdentities } from './router-identities.domain.ts';
import { routerIdentityEventSubscription } from './router-identity-events.transport.ts';
import { RouterIdentityIntegrity } from './router-identity-integrity.domain.ts';

/**
 * Router identities follow inventory's edge routers: the consumer of inventory's events, and the
 * integrity check that compares them with inventory's pages and repairs them.
 */
export function routerIdentitiesWiring(core: AuthCore) {
  const routerIdentities = new RouterIdentities(core.sessions);
  const stores = (tx: Db, events: EventSink) => ({ identities: new PgIdentityStore(tx), events });
  return {
    subscription: routerIdentityEventSubscription(
      routerIdentities,
      (tx, events) => ({ ...stores(tx, events), positions: new PgRouterEventPositions(tx) }),
      core.logger,
    ),
    integrity: new RouterIdentityIntegrity(
      {
        edgeRouterPages: () => ownerEntityStates(core.bus, 'inventory', 'edgeRouter'),
        read: (fn) => core.database.transaction((tx) => fn(new PgIdentityStore(tx))),
        // No relay kick, as before: the relay hears the outbox's NOTIFY (or polls) for a fix's events.
        work: createUnitOfWork(core.database, undefined, 'auth', stores),
      },
      routerIdentities,
    ),
  };
}
