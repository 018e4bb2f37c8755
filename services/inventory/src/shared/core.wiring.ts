import {
  type Bus,
  type Database,
  type Db,
  type EventSink,
  type Logger,
  OutboxRelay,
  createReader,
  createUnitOfWork,
  readOnlyEventSink,
} from '@ziti/platform';
import { PgConfigTypeStore } from '../config-types/config-types.store.ts';
import { PgConfigStore } from '../configs/configs.store.ts';
import { PgIdentityServiceConfigStore } from '../identity-service-configs/identity-service-configs.store.ts';
import { PgRouterPresenceStore } from '../router-presence/router-presence.store.ts';
import { PgRouterStore } from '../routers/routers.store.ts';
import { PgServiceStore } from '../services/services.store.ts';
import { PgTerminatorStore } from '../terminators/terminators.store.ts';
import { PgSeedStore } from './seeds.store.ts';
import type { InventoryStores } from './stores.ports.ts';

/** The stores of one transaction (or of the pool). */
export function bindInventoryStores(tx: Db, events: EventSink): InventoryStores {
  return {
    seeds: new PgSeedStore(tx),
    configTypes: new PgConfigTypeStore(tx),
    configs: new PgConfigStore(tx),
    services: new PgServiceStore(tx),
    routers: new PgRouterStore(tx),
    routerPresence: new PgRouterPresenceStore(tx),
    terminators: new PgTerminatorStore(tx),
    identityServiceConfigs: new PgIdentityServiceConfigStore(tx),
    events,
  };
}

/**
 * What inventory's resources share: the database, the bus, the logger, the outbox relay, the unit of
 * work over `bindInventoryStores`, the stores bound to a caller's transaction (`read`) and the
 * reader on the pool for the router edge's hot paths (dials, router reads' presence).
 */
export function inventoryCoreWiring(d: { database: Database; bus: Bus; logger: Logger }) {
  const relay = new OutboxRelay(d.database, d.bus, 'inventory', d.logger);
  return {
    ...d,
    relay,
    work: createUnitOfWork<InventoryStores>(d.database, relay, 'inventory', bindInventoryStores),
    read: (tx: Db) => bindInventoryStores(tx, readOnlyEventSink),
    reader: createReader<InventoryStores>(d.database, bindInventoryStores),
  };
}

export type InventoryCore = ReturnType<typeof inventoryCoreWiring>;
