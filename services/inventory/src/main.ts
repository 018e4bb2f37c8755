import 'reflect-metadata';
import { configOrExit, exitOnStartFailure, runServiceMain } from '@ziti/platform';
import { createInventoryService, migrations } from './app.ts';
import { inventoryDatabaseVar, readInventoryProcessConfig } from './config.ts';

// Every variable is checked before anything connects: one message naming every problem, exit 1.
configOrExit('inventory', () => readInventoryProcessConfig());

await runServiceMain({
  name: 'inventory',
  databaseVar: inventoryDatabaseVar,
  migrations,
  create: ({ database, bus, logger }) => createInventoryService({ database, bus, logger }),
}).catch(exitOnStartFailure('inventory'));
