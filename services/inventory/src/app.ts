import { hostname } from 'node:os';
import type { Bus, Database, Db, EventSink, Logger, RunnableService } from '@ziti/platform';
import {
  OutboxRelay,
  createServiceRuntime,
  createUnitOfWork,
  readMigrations,
  readOnlyEventSink,
  shortId,
  snapshotLabel,
} from '@ziti/platform';
import { AjvSchemaValidator } from './adapters/ajv-schema-validator.ts';
import { BusIdentityDirectory, BusRouterEnrollments, BusServiceMaintenance } from './bus/cluster.ts';
import { inventoryCalls } from './bus/calls.ts';
import { identityEventSubscription } from './bus/identity-events.ts';
import { maintenanceCalls } from './bus/maintenance.ts';
import { inventoryOperations } from './bus/operations.ts';
import { ConfigTypeService } from './domain/config-types.ts';
import { ConfigService } from './domain/configs.ts';
import { DatabaseMaintenance } from './domain/database-maintenance.ts';
import { IdentityServiceConfigService } from './domain/identity-service-configs.ts';
import { InventoryMaintenance } from './domain/inventory-maintenance.ts';
import type { InventoryStores } from './domain/ports.ts';
import { type RouterEnrollments, RouterService } from './domain/routers.ts';
import { ServiceCatalog } from './domain/services.ts';
import { TerminatorService } from './domain/terminators.ts';
import { PgIntegrityJobStore, PgRateLimitStore } from './store/pg-maintenance-stores.ts';
import { PgConfigStore } from './store/pg-config-store.ts';
import { PgConfigTypeStore } from './store/pg-config-type-store.ts';
import { PgIdentityServiceConfigStore } from './store/pg-identity-service-config-store.ts';
import { PgRouterStore } from './store/pg-router-store.ts';
import { PgSeedStore } from './store/pg-seed-store.ts';
import { PgServiceStore } from './store/pg-service-store.ts';
import { PgTerminatorStore } from './store/pg-terminator-store.ts';

export interface InventoryServiceDeps {
  database: Database;
  bus: Bus;
  logger: Logger;
  ownsBus?: boolean;
  /** Router enrollments (pki-enrollment); defaults to asking it over the bus. */
  routerEnrollments?: RouterEnrollments;
}

export const migrations = readMigrations(new URL('../migrations/', import.meta.url));

/** Composition root of the inventory service: stores, domain, bus endpoints and consumers. */
export function createInventoryService(deps: InventoryServiceDeps): RunnableService {
  const relay = new OutboxRelay(deps.database, deps.bus, 'inventory', deps.logger);
  const bind = (tx: Db, events: EventSink): InventoryStores => ({
    seeds: new PgSeedStore(tx),
    configTypes: new PgConfigTypeStore(tx),
    configs: new PgConfigStore(tx),
    services: new PgServiceStore(tx),
    routers: new PgRouterStore(tx),
    terminators: new PgTerminatorStore(tx),
    identityServiceConfigs: new PgIdentityServiceConfigStore(tx),
    events,
  });
  const work = createUnitOfWork<InventoryStores>(deps.database, relay, 'inventory', bind);
  const read = (tx: Db) => bind(tx, readOnlyEventSink);
  const schemas = new AjvSchemaValidator();
  const identities = new BusIdentityDirectory(deps.bus);
  const configTypes = new ConfigTypeService(work, schemas);
  const routers = new RouterService(work, deps.routerEnrollments ?? new BusRouterEnrollments(deps.bus));
  const maintenance = new DatabaseMaintenance(
    new PgIntegrityJobStore(deps.database.db),
    new PgRateLimitStore(deps.database.db),
    new BusServiceMaintenance(deps.bus),
    {
      owner: `${hostname()}:${process.pid}:${shortId()}`,
      newLabel: () => snapshotLabel(),
      runInBackground: (job) => void job.catch((err) => deps.logger.error({ err }, 'data integrity job failed')),
    },
  );
  const services = new ServiceCatalog(work);
  const terminators = new TerminatorService(work);
  const identityServiceConfigs = new IdentityServiceConfigService(work, identities);
  return createServiceRuntime({
    owner: 'inventory',
    database: deps.database,
    bus: deps.bus,
    logger: deps.logger,
    migrations,
    relay,
    calls: {
      ...inventoryCalls(routers, terminators, services),
      ...maintenanceCalls(deps.database, new InventoryMaintenance<Db>({ work, read, schemas, identities })),
    },
    operations: inventoryOperations({
      configTypes,
      configs: new ConfigService(work, schemas),
      services,
      routers,
      terminators,
      identityServiceConfigs,
      maintenance,
    }),
    subscriptions: [
      identityEventSubscription(
        identityServiceConfigs,
        (tx, events) => ({ identityServiceConfigs: new PgIdentityServiceConfigStore(tx), events }),
        deps.logger,
      ),
    ],
    onStart: async () => {
      if (await configTypes.seedBuiltins()) deps.logger.info('built-in config types created');
    },
    onStop: () => maintenance.idle(),
    ...(deps.ownsBus === undefined ? {} : { ownsBus: deps.ownsBus }),
  });
}
