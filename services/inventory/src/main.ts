import 'reflect-metadata';
import { NatsBus, createLogger, migrate, openDatabase, readServiceEnv, runProcess } from '@ziti/platform';
import { createInventoryService, migrations } from './app.ts';

const logger = createLogger('inventory');
const env = readServiceEnv('INVENTORY_DATABASE_URL');
const database = await openDatabase({ url: env.databaseUrl, poolSize: env.poolSize });
if (process.argv[2] === 'migrate') {
  const applied = await migrate(database, migrations);
  logger.info({ applied }, 'migrations applied');
  await database.close();
  process.exit(0);
}
const bus = await NatsBus.connect({ url: env.natsUrl, name: 'inventory', namespace: env.busNamespace, logger });
await runProcess(createInventoryService({ database, bus, logger }), logger, env.healthPort);
