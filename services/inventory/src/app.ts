import type { Bus, Database, Logger, RunnableService } from '@ziti/platform';
import { maintenanceCalls } from './bus/maintenance.ts';
import { OutboxRelay, createServiceRuntime, readMigrations } from '@ziti/platform';
import { inventoryOperations } from './bus/operations.ts';

export interface InventoryServiceDeps {
  database: Database;
  bus: Bus;
  logger: Logger;
  ownsBus?: boolean;
}

export const migrations = readMigrations(new URL('../migrations/', import.meta.url));

/** Composition root of the inventory service: stores, domain, bus endpoints and consumers. */
export function createInventoryService(deps: InventoryServiceDeps): RunnableService {
  const relay = new OutboxRelay(deps.database, deps.bus, 'inventory', deps.logger);
  return createServiceRuntime({
    owner: 'inventory',
    database: deps.database,
    bus: deps.bus,
    logger: deps.logger,
    migrations,
    relay,
    calls: maintenanceCalls(deps.database),
    operations: inventoryOperations(),
    ...(deps.ownsBus === undefined ? {} : { ownsBus: deps.ownsBus }),
  });
}
