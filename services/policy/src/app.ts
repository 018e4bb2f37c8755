import type { Bus, Database, Logger, RunnableService } from '@ziti/platform';
import { OutboxRelay, createServiceRuntime, readMigrations } from '@ziti/platform';
import { policyOperations } from './bus/operations.ts';

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
    operations: policyOperations(),
    ...(deps.ownsBus === undefined ? {} : { ownsBus: deps.ownsBus }),
  });
}
