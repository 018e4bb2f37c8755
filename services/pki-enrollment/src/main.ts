import 'reflect-metadata';
import { NatsBus, createLogger, migrate, openDatabase, readServiceEnv, runProcess } from '@ziti/platform';
import { createPkiService, migrations } from './app.ts';
import { readPkiConfig } from './config.ts';

const logger = createLogger('pki-enrollment');
const env = readServiceEnv('PKI_DATABASE_URL');
const database = await openDatabase({ url: env.databaseUrl, poolSize: env.poolSize });
if (process.argv[2] === 'migrate') {
  const applied = await migrate(database, migrations);
  logger.info({ applied }, 'migrations applied');
  await database.close();
  process.exit(0);
}
const config = readPkiConfig();
const bus = await NatsBus.connect({ url: env.natsUrl, name: 'pki-enrollment', namespace: env.busNamespace, logger });
await runProcess(createPkiService({ config, database, bus, logger }), logger, env.healthPort);
