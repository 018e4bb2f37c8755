import { NatsBus } from './bus/nats-bus.ts';
import type { Bus } from './bus/bus.ts';
import { type Database, openDatabase } from './db/database.ts';
import { type Migration, migrate } from './db/migrations.ts';
import { type Logger, createLogger } from './logger.ts';
import { type RunnableService, runProcess } from './service-host.ts';
import { readServiceEnv } from './service-runtime.ts';

/**
 * The process entry of a clustered service: read its environment, open its database, and either
 * apply its migrations and exit (`main.ts migrate`, the Helm migration Job) or connect to NATS and
 * run the service until SIGTERM. Each service's `main.ts` only says what is its own.
 */
export async function runServiceMain(options: {
  name: string;
  databaseVar: string;
  migrations: Migration[];
  create: (infra: { database: Database; bus: Bus; logger: Logger }) => RunnableService;
}): Promise<void> {
  const logger = createLogger(options.name);
  const env = readServiceEnv(options.databaseVar);
  const database = await openDatabase({ url: env.databaseUrl, poolSize: env.poolSize, service: options.name });
  if (process.argv[2] === 'migrate') {
    const applied = await migrate(database, options.migrations);
    logger.info({ applied }, 'migrations applied');
    await database.close();
    process.exit(0);
  }
  const bus = await NatsBus.connect({ url: env.natsUrl, name: options.name, namespace: env.busNamespace, logger });
  await runProcess(options.create({ database, bus, logger }), logger, env.healthPort);
}
