import type { CallTable, OperationHandlers, ServiceMaintenance } from '@ziti/platform';
import { maintenanceHandlers, reply } from '@ziti/platform';
import type { DatabaseMaintenance } from './database-maintenance.domain.ts';
import { dataIntegrityDetail } from './maintenance.mapper.ts';

/**
 * inventory's maintenance calls (`maintenanceCallContracts`: `/summary` counts, the integrity check and
 * fix, snapshots, event position, owner state pages), answered by its `pgMaintenance`.
 */
export function maintenanceCalls(maintenance: ServiceMaintenance): CallTable {
  return maintenanceHandlers(maintenance);
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
