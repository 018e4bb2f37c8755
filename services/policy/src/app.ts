import type { Bus, Database, Logger, RunnableService } from '@ziti/platform';
import { maintenanceCalls } from './bus/maintenance.ts';
import { OutboxRelay, createServiceRuntime, readMigrations } from '@ziti/platform';
import { authReadModelSubscription, inventoryReadModelSubscription } from './bus/read-model-events.ts';
import { policyOperations } from './bus/operations.ts';
import { PgEdgeRouterReadModel, PgIdentityReadModel, PgServiceReadModel } from './store/pg-identity-read-model.ts';

export interface PolicyServiceDeps {
  database: Database;
  bus: Bus;
  logger: Logger;
  ownsBus?: boolean;
}

export const migrations = readMigrations(new URL('../migrations/', import.meta.url));

/** Composition root of the policy service: stores, domain, bus endpoints and consumers. */
export function createPolicyService(deps: PolicyServiceDeps): RunnableService {
  const relay = new OutboxRelay(deps.database, deps.bus, 'policy', deps.logger);
  const identities = (db: import('@ziti/platform').Db) => new PgIdentityReadModel(db);
  const services = (db: import('@ziti/platform').Db) => new PgServiceReadModel(db);
  const edgeRouters = (db: import('@ziti/platform').Db) => new PgEdgeRouterReadModel(db);
  return createServiceRuntime({
    owner: 'policy',
    database: deps.database,
    bus: deps.bus,
    logger: deps.logger,
    migrations,
    relay,
    calls: maintenanceCalls(deps.database, deps.bus),
    operations: policyOperations({ db: deps.database.db, identities, services, edgeRouters }),
    subscriptions: [
      authReadModelSubscription(identities, deps.logger),
      inventoryReadModelSubscription(services, edgeRouters, deps.logger),
    ],
    ...(deps.ownsBus === undefined ? {} : { ownsBus: deps.ownsBus }),
  });
}
