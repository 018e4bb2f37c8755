import type { CallTable, Database, Db } from '@ziti/platform';
import { maintenanceHandlers } from '@ziti/platform';
import type { InventoryMaintenance } from '../domain/inventory-maintenance.ts';

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

/**
 * inventory's maintenance calls; its integrity check and the states of the entities it owns
 * (read in the platform's snapshot, `tx`) are the domain's `InventoryMaintenance`.
 */
export function maintenanceCalls(database: Database, maintenance?: InventoryMaintenance<Db>): CallTable {
  return maintenanceHandlers({
    service: 'inventory',
    database,
    summaryTables,
    ...(maintenance
      ? {
          integrity: (fix: boolean) => maintenance.check(fix),
          entityStates: {
            service: (r, tx) => maintenance.serviceStates(r, tx),
            edgeRouter: (r, tx) => maintenance.edgeRouterStates(r, tx),
            config: (r, tx) => maintenance.configStates(r, tx),
            configType: (r, tx) => maintenance.configTypeStates(r, tx),
            identityServiceConfigs: (r, tx) => maintenance.identityServiceConfigsStates(r, tx),
          },
        }
      : {}),
  });
}
