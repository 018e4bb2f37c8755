import type { Bus, Database, Logger, RunnableService } from '@ziti/platform';
import { createServiceRuntime, readMigrations } from '@ziti/platform';
import { AjvSchemaValidator } from './config-types/ajv-schema-validator.adapter.ts';
import { ConfigTypeService } from './config-types/config-types.domain.ts';
import { ConfigService } from './configs/configs.domain.ts';
import { BusIdentityDirectory } from './identity-service-configs/identity-directory.adapter.ts';
import { identityServiceConfigsWiring } from './identity-service-configs/identity-service-configs.wiring.ts';
import { maintenanceWiring } from './maintenance/maintenance.wiring.ts';
import { inventoryOperations } from './operations.transport.ts';
import { routerPresenceWiring } from './router-presence/router-presence.wiring.ts';
import type { RouterEnrollments } from './routers/routers.ports.ts';
import { routersWiring } from './routers/routers.wiring.ts';
import { ServiceCatalog } from './services/services.domain.ts';
import { inventoryCalls } from './shared/calls.transport.ts';
import { inventoryCoreWiring } from './shared/core.wiring.ts';
import { terminatorsWiring } from './terminators/terminators.wiring.ts';

export interface InventoryServiceDeps {
  database: Database;
  bus: Bus;
  logger: Logger;
  ownsBus?: boolean;
  /** Router enrollments (pki-enrollment); defaults to asking it over the bus. */
  routerEnrollments?: RouterEnrollments;
}

export const migrations = readMigrations(new URL('../migrations/', import.meta.url));

/**
 * Composition root of the inventory service: the shared core and each resource's wiring (its
 * `*.wiring.ts`, beside its code), composed into the runtime.
 */
export function createInventoryService(deps: InventoryServiceDeps): RunnableService {
  const core = inventoryCoreWiring(deps);
  const { work, logger } = core;
  const schemas = new AjvSchemaValidator();
  const identities = new BusIdentityDirectory(core.bus);
  const configTypes = new ConfigTypeService(work, schemas);
  const routers = routersWiring(core, deps.routerEnrollments);
  const services = new ServiceCatalog(work);
  const terminators = terminatorsWiring(core);
  const presence = routerPresenceWiring(core);
  const overrides = identityServiceConfigsWiring(core, identities);
  const maintenance = maintenanceWiring(core, { schemas, identities });
  return createServiceRuntime({
    owner: 'inventory',
    database: core.database,
    bus: core.bus,
    logger,
    migrations,
    relay: core.relay,
    calls: {
      ...inventoryCalls(routers, terminators, services, presence.presence, configTypes),
      ...maintenance.calls,
    },
    operations: inventoryOperations({
      configTypes,
      configs: new ConfigService(work, schemas),
      services,
      routers,
      presence: presence.presence,
      terminators,
      identityServiceConfigs: overrides.service,
      maintenance: maintenance.maintenance,
    }),
    subscriptions: [overrides.subscription],
    onStart: async () => {
      if (await configTypes.seedBuiltins()) logger.info('built-in config types created');
      presence.sweeper.start();
    },
    // The sweeper writes events: it stops before the relay's last flush, so this replica publishes them.
    onDrained: () => presence.sweeper.stop(),
    onStop: () => maintenance.maintenance.idle(),
    ...(deps.ownsBus === undefined ? {} : { ownsBus: deps.ownsBus }),
  });
}
