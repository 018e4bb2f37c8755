import type { CallTable, Database, Db, OperationHandlers } from '@ziti/platform';
import { maintenanceHandlers, reply } from '@ziti/platform';
import type { DatabaseMaintenance } from './database-maintenance.domain.ts';
import type { InventoryMaintenance } from './inventory-maintenance.domain.ts';
import { dataIntegrityDetail } from './maintenance.mapper.ts';

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
            routerPresence: (r, tx) => maintenance.routerPresenceStates(r, tx),
            config: (r, tx) => maintenance.configStates(r, tx),
            configType: (r, tx) => maintenance.configTypeStates(r, tx),
            identityServiceConfigs: (r, tx) => maintenance.identityServiceConfigsStates(r, tx),
          },
        }
      : {}),
  });
}

/** `/summary` and `/database/*` (ZITI-FACTS §7.7, §13): the cluster's, gathered by `DatabaseMaintenance`. */
export function maintenanceOperations(deps: { maintenance: DatabaseMaintenance }) {
  const { maintenance } = deps;
  return {
    // The reference answers `meta: null`; `{}` keeps generated clients that require meta working.
    'management.listSummary': async () => reply.ok(await maintenance.summary()),
    'management.checkDataIntegrity': async () => {
      await maintenance.startIntegrityJob(false);
      return reply.empty(202);
    },
    'management.fixDataIntegrity': async () => {
      await maintenance.startIntegrityJob(true);
      return reply.empty(202);
    },
    'management.dataIntegrityResults': async () => {
      const detail = dataIntegrityDetail(await maintenance.results());
      return reply.json({
        data: detail,
        meta: { pagination: { limit: -1, offset: 0, totalCount: detail.results.length }, filterableFields: [] },
      });
    },
    'management.createDatabaseSnapshot': async () => {
      await maintenance.snapshot();
      return reply.empty();
    },
  } satisfies Partial<OperationHandlers<'inventory'>>;
}
