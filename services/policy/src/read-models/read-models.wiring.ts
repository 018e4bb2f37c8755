import type { Db, EventHandler, EventSubscription, Logger } from '@ziti/platform';
import type { policyEngineWiring } from '../policies/policy-engine.wiring.ts';
import { authReadModelSubscription, inventoryReadModelSubscription } from './read-model-events.transport.ts';
import { PgConfigReadModel, PgConfigTypeReadModel, PgIdentityServiceConfigsReadModel } from './read-models.store.ts';

/**
 * policy's consumers: auth's events (the identities read model, then the derivation; and the API
 * sessions' handlers beside them) and inventory's (services, edge routers, configs and config types,
 * overrides, router presence), each applied with the derivation of what it changes.
 */
export function readModelSubscriptionsWiring(d: {
  engine: ReturnType<typeof policyEngineWiring>;
  apiSessions: EventHandler[];
  logger: Logger;
}): EventSubscription[] {
  const { identities, services, edgeRouters, routerPresence, derive } = d.engine;
  const auth = authReadModelSubscription(identities, derive, d.logger);
  return [
    { ...auth, handlers: [...auth.handlers, ...d.apiSessions] },
    inventoryReadModelSubscription(
      {
        services,
        edgeRouters,
        configs: (db: Db) => new PgConfigReadModel(db),
        configTypes: (db: Db) => new PgConfigTypeReadModel(db),
        overrides: (db: Db) => new PgIdentityServiceConfigsReadModel(db),
        presence: routerPresence,
      },
      derive,
      d.logger,
    ),
  ];
}
