import { hostname } from 'node:os';
import { type CallTable, type Db, shortId, snapshotLabel } from '@ziti/platform';
import type { AjvSchemaValidator } from '../config-types/ajv-schema-validator.adapter.ts';
import type { BusIdentityDirectory } from '../identity-service-configs/identity-directory.adapter.ts';
import type { InventoryCore } from '../shared/core.wiring.ts';
import { DatabaseMaintenance } from './database-maintenance.domain.ts';
import { InventoryMaintenance } from './inventory-maintenance.domain.ts';
import { PgIntegrityJobStore, PgRateLimitStore, pgMaintenance } from './maintenance.store.ts';
import { maintenanceCalls } from './maintenance.transport.ts';
import { BusServiceMaintenance } from './service-maintenance.adapter.ts';

/**
 * Maintenance: the cluster's `/summary` and `/database/*` (`DatabaseMaintenance`, one integrity job
 * at a time across replicas), and inventory's own maintenance calls (its tables, checks and the
 * states of the entities it owns).
 */
export function maintenanceWiring(
  core: InventoryCore,
  d: { schemas: AjvSchemaValidator; identities: BusIdentityDirectory },
): { maintenance: DatabaseMaintenance; calls: CallTable } {
  const { database, logger } = core;
  return {
    maintenance: new DatabaseMaintenance(
      new PgIntegrityJobStore(database.db),
      new PgRateLimitStore(database.db),
      new BusServiceMaintenance(core.bus),
      {
        owner: `${hostname()}:${process.pid}:${shortId()}`,
        newLabel: () => snapshotLabel(),
        runInBackground: (job) => void job.catch((err) => logger.error({ err }, 'data integrity job failed')),
      },
    ),
    calls: maintenanceCalls(
      pgMaintenance(database, new InventoryMaintenance<Db>({ work: core.work, read: core.read, ...d })),
    ),
  };
}
