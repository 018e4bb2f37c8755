import 'reflect-metadata';
import { NatsBus, createLogger, migrate, openDatabase, readServiceEnv, runProcess } from '@ziti/platform';
import { createPolicyService, migrations } from './app.ts';

const logger = createLogger('policy');
const env = readServiceEnv('POLICY_DATABASE_URL');
const database = await openDatabase({ url: env.databaseUrl, poolSize: env.poolSize });
if (process.argv[2] === 'migrate') {
  const applied = await migrate(database, migrations);
  logger.info({ applied }, 'migrations applied');
  await database.close();
  process.exit(0);
}
const bus = await NatsBus.connect({ url: env.natsUrl, name: 'policy', namespace: env.busNamespace, logger });
await runProcess(createPolicyService({ database, bus, logger }), logger, env.healthPort);
