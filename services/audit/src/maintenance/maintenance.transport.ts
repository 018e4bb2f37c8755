import type { CallTable, ServiceMaintenance } from '@ziti/platform';
import { maintenanceHandlers } from '@ziti/platform';

/**
 * audit's maintenance calls (`maintenanceCallContracts`: the integrity check, snapshots, event
 * position), answered by its `pgMaintenance`.
 */
export function maintenanceCalls(maintenance: ServiceMaintenance): CallTable {
  return maintenanceHandlers(maintenance);
}
