import 'reflect-metadata';
import { runServiceMain } from '@ziti/platform';
import { createInventoryService, migrations } from './app.ts';

await runServiceMain({
  name: 'inventory',
  databaseVar: 'INVENTORY_DATABASE_URL',
  migrations,
  create: ({ database, bus, logger }) => createInventoryService({ database, bus, logger }),
});
