import { hostname } from 'node:os';
import type { Bus, Database, Db, EventSink, Logger, RunnableService } from '@ziti/platform';
import {
  OutboxRelay,
  createReader,
  createServiceRuntime,
  createUnitOfWork,
  readMigrations,
  readOnlyEventSink,
  shortId,
  snapshotLabel,
} from '@ziti/platform';
import { AjvSchemaValidator } from './config-types/ajv-schema-validator.adapter.ts';
import { ConfigTypeService } from './config-types/config-types.domain.ts';
import { PgConfigTypeStore } from './config-types/config-types.store.ts';
import { ConfigService } from './configs/configs.domain.ts';
import { PgConfigStore } from './configs/configs.store.ts';
import { BusIdentityDirectory } from './identity-service-configs/identity-directory.adapter.ts';
import { identityEventSubscription } from './identity-service-configs/identity-events.transport.ts';
import { IdentityServiceConfigService } from './identity-service-configs/identity-service-configs.domain.ts';
import { PgIdentityServiceConfigStore } from './identity-service-configs/identity-service-configs.store.ts';
import { DatabaseMaintenance } from './maintenance/database-maintenance.domain.ts';
import { InventoryMaintenance } from './maintenance/inventory-maintenance.domain.ts';
import { PgIntegrityJobStore, PgRateLimitStore } from './maintenance/maintenance.store.ts';
import { pgMaintenance } from './maintenance/maintenance.store.ts';
import { maintenanceCalls } from './maintenance/maintenance.transport.ts';
import { BusServiceMaintenance } from './maintenance/service-maintenance.adapter.ts';
import { inventoryOperations } from './operations.transport.ts';
import { RouterPresenceSweeper } from './router-presence/router-presence-sweeper.domain.ts';
import { RouterPresenceService } from './router-presence/router-presence.domain.ts';
import { PgRouterPresenceStore } from './router-presence/router-presence.store.ts';
import { BusRouterEnrollments } from './routers/router-enrollments.adapter.ts';
import { RouterService } from './routers/routers.domain.ts';
import type { RouterEnrollments } from './routers/routers.ports.ts';
import { PgRouterStore } from './routers/routers.store.ts';
import { ServiceCatalog } from './services/services.domain.ts';
import { PgServiceStore } from './services/services.store.ts';
import { inventoryCalls } from './shared/calls.transport.ts';
import { PgSeedStore } from './shared/seeds.store.ts';
import type { InventoryStores } from './shared/stores.ports.ts';
import { FabricTerminatorDynamicCosts } from './terminators/terminator-dynamic-costs.adapter.ts';
import { TerminatorService } from './terminators/terminators.domain.ts';
import { PgTerminatorStore } from './terminators/terminators.store.ts';

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
    routerPresence: new PgRouterPresenceStore(tx),
    terminators: new PgTerminatorStore(tx),
    identityServiceConfigs: new PgIdentityServiceConfigStore(tx),
    events,
  });
  const work = createUnitOfWork<InventoryStores>(deps.database, relay, 'inventory', bind);
  const read = (tx: Db) => bind(tx, readOnlyEventSink);
  // Reads on the router edge's hot paths (dials, router reads' presence), outside any transaction.
  const reader = createReader<InventoryStores>(deps.database, bind);
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
  const terminators = new TerminatorService(
    work,
    undefined,
    reader,
    new FabricTerminatorDynamicCosts(deps.bus, deps.logger),
  );
  const presence = new RouterPresenceService(work, reader);
  // Presences whose lease lapsed (their fabric replica died) turn offline: every 2 s, any number of replicas.
  const presenceSweeper = new RouterPresenceSweeper(work, {
    onError: (err) => deps.logger.warn({ err }, 'router presence sweep failed; will retry'),
  });
  const identityServiceConfigs = new IdentityServiceConfigService(work, identities);
  return createServiceRuntime({
    owner: 'inventory',
    database: deps.database,
    bus: deps.bus,
    logger: deps.logger,
    migrations,
    relay,
    calls: {
      ...inventoryCalls(routers, terminators, services, presence, configTypes),
      ...maintenanceCalls(
        pgMaintenance(deps.database, new InventoryMaintenance<Db>({ work, read, schemas, identities })),
      ),
    },
    operations: inventoryOperations({
      configTypes,
      configs: new ConfigService(work, schemas),
      services,
      routers,
      presence,
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
      presenceSweeper.start();
    },
    // The sweeper writes events: it stops before the relay's last flush, so this replica publishes them.
    onDrained: () => presenceSweeper.stop(),
    onStop: () => maintenance.idle(),
    ...(deps.ownsBus === undefined ? {} : { ownsBus: deps.ownsBus }),
  });
}
