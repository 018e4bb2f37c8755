import type { CallTable, Database, Db } from '@ziti/platform';
import { maintenanceHandlers } from '@ziti/platform';
import { checkInventoryIntegrity } from '../domain/inventory-integrity.ts';
import type { IdentityDirectory, InventoryStores, SchemaValidator, UnitOfWork } from '../domain/ports.ts';
import { configTypeState } from '../domain/config-types.ts';
import { configState } from '../domain/configs.ts';
import { identityServiceConfigsState } from '../domain/identity-service-configs.ts';
import { edgeRouterState } from '../domain/routers.ts';
import { serviceState } from '../domain/services.ts';

/**
 * Service-wide maintenance calls used by inventory's fan-out operations (`/summary`,
 * `/database/*`): entity counts of this service, its integrity check and fix, its snapshot.
 * Each service lists here the tables it owns that `/summary` reports.
 */
export const summaryTables: Record<string, string> = {
  configTypes: 'config_types',
  configs: 'configs',
  services: 'services',
  routers: 'routers',
  edgeRouters: "routers where kind = 'edge'",
  transitRouters: "routers where kind = 'transit'",
  terminators: 'terminators',
};

export interface InventoryMaintenanceDeps {
  work: UnitOfWork;
  /** The stores bound to a transaction the caller opened (entity states are read in the platform's snapshot). */
  read: (tx: Db) => InventoryStores;
  schemas: SchemaValidator;
  identities: IdentityDirectory;
}

export function maintenanceCalls(database: Database, deps?: InventoryMaintenanceDeps): CallTable {
  return maintenanceHandlers({
    service: 'inventory',
    database,
    summaryTables,
    ...(deps
      ? {
          integrity: (fix: boolean) => checkInventoryIntegrity(deps.work, deps.schemas, deps.identities, fix),
          entityStates: {
            service: async (r, tx) =>
              (await deps.read(tx).services.page(r.after, r.limit ?? 500, r.ids)).map(serviceState),
            edgeRouter: async (r, tx) =>
              (await deps.read(tx).routers.page('edge', r.after, r.limit ?? 500, r.ids)).map(edgeRouterState),
            config: async (r, tx) =>
              (await deps.read(tx).configs.page(r.after, r.limit ?? 500, r.ids)).map(configState),
            configType: async (r, tx) =>
              (await deps.read(tx).configTypes.page(r.after, r.limit ?? 500, r.ids)).map(configTypeState),
            // One state per identity that has overrides (one without any is absent: its list is empty).
            identityServiceConfigs: async (r, tx) => {
              const store = deps.read(tx).identityServiceConfigs;
              const ids = await store.identityIds(r.after, r.limit ?? 500, r.ids);
              const links = await store.listByIdentities(ids);
              return ids.map((id) =>
                identityServiceConfigsState(
                  id,
                  links.filter((l) => l.identityId === id),
                ),
              );
            },
          },
        }
      : {}),
  });
}
