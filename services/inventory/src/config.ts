import { ConfigProblems, readClusterUrls, readProcessEnv, readServiceEnv } from '@ziti/platform';

/** The environment variable of inventory's own Postgres database in the cluster. */
export const inventoryDatabaseVar = 'INVENTORY_DATABASE_URL';

/**
 * Everything an inventory process reads, checked before it connects to anything: NATS, its
 * database, logging (inventory has no settings of its own). Every problem is reported at once.
 */
export function readInventoryProcessConfig(source: NodeJS.ProcessEnv = process.env): void {
  const problems = new ConfigProblems();
  problems.take(() => readProcessEnv(source));
  problems.take(() => readServiceEnv(inventoryDatabaseVar, source));
  problems.take(() => readClusterUrls(inventoryDatabaseVar, source));
  problems.done();
}
