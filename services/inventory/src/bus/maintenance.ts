import type { Database } from '@ziti/platform';
import { maintenanceHandlers } from '@ziti/platform';
import { checkInventoryIntegrity } from '../domain/inventory-integrity.ts';
import type { IdentityDirectory, SchemaValidator, UnitOfWork } from '../domain/ports.ts';
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
  schemas: SchemaValidator;
  identities: IdentityDirectory;
}

export function maintenanceCalls(
  database: Database,
  deps?: InventoryMaintenanceDeps,
): Record<string, (payload: unknown) => Promise<unknown>> {
  return maintenanceHandlers({
    service: 'inventory',
    database,
    summaryTables,
    ...(deps
      ? {
          integrity: (fix: boolean) => checkInventoryIntegrity(deps.work, deps.schemas, deps.identities, fix),
          entityStates: {
            service: async (r) =>
              (await deps.work((s) => s.services.page(r.after, r.limit ?? 500, r.ids))).map(serviceState),
            edgeRouter: async (r) =>
              (await deps.work((s) => s.routers.page('edge', r.after, r.limit ?? 500, r.ids))).map(edgeRouterState),
          },
        }
      : {}),
  });
}
