import type { IntegrityResult } from '@ziti/contracts';
import { type Database, type ServiceMaintenance, databaseMaintenance } from '@ziti/platform';

/**
 * audit's maintenance over its database (the platform's `databaseMaintenance`): its event position
 * (the change feed's, `auditRecord.created`), a snapshot of its database and its integrity results
 * (what its consumers parked). It owns no entity, so it answers no state pages and adds nothing to
 * `/summary`.
 */
export function pgMaintenance(database: Database, integrity: () => Promise<IntegrityResult[]>): ServiceMaintenance {
  return databaseMaintenance({ service: 'audit', database, summaryTables: {}, integrity });
}
