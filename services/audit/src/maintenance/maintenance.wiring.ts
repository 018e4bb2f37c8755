import { type CallTable, type Database, parkedEventResults } from '@ziti/platform';
import { pgMaintenance } from './maintenance.store.ts';
import { maintenanceCalls } from './maintenance.transport.ts';

/** audit's maintenance calls: its integrity results are what its consumers parked. */
export const maintenanceWiring = (database: Database): CallTable =>
  maintenanceCalls(pgMaintenance(database, () => parkedEventResults(database.db)));
