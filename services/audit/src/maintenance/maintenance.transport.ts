import type { IntegrityResult } from '@ziti/contracts';
import type { CallTable, Database } from '@ziti/platform';
import { maintenanceHandlers } from '@ziti/platform';

/**
 * audit's maintenance calls: its event position (the change feed's, `auditRecord.created`), a snapshot
 * of its database and its integrity results (what its consumers parked). It owns no entity, so it
 * answers no state pages and adds nothing to `/summary`.
 */
export function maintenanceCalls(database: Database, integrity: () => Promise<IntegrityResult[]>): CallTable {
  return maintenanceHandlers({ service: 'audit', database, summaryTables: {}, integrity });
}
