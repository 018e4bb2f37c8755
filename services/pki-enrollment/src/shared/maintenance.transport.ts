import type { CallTable, ServiceMaintenance } from '@ziti/platform';
import { maintenanceHandlers } from '@ziti/platform';

/**
 * pki-enrollment's maintenance calls (`maintenanceCallContracts`: `/summary` counts, the integrity check and
 * fix, snapshots, event position, owner state pages), answered by its `pgMaintenance`.
 */
export function maintenanceCalls(maintenance: ServiceMaintenance): CallTable {
  return maintenanceHandlers(maintenance);
}
