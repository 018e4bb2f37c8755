import type { Bus, Database, Logger, RunnableService } from '@ziti/platform';
import { maintenanceCalls } from './bus/maintenance.ts';
import { OutboxRelay, createServiceRuntime, readMigrations } from '@ziti/platform';
import { identityEventSubscription } from './bus/identity-events.ts';
import { policyOperations } from './bus/operations.ts';
import { PgIdentityReadModel } from './store/pg-identity-read-model.ts';

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
  return createServiceRuntime({
    owner: 'policy',
    database: deps.database,
    bus: deps.bus,
    logger: deps.logger,
    migrations,
    relay,
    calls: maintenanceCalls(deps.database),
    operations: policyOperations({ db: deps.database.db, identities: (db) => new PgIdentityReadModel(db) }),
    subscriptions: [identityEventSubscription((tx) => new PgIdentityReadModel(tx), deps.logger)],
    ...(deps.ownsBus === undefined ? {} : { ownsBus: deps.ownsBus }),
  });
}
