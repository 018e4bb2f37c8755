import 'reflect-metadata';
import { NatsBus, RedisApiSessionStore, createLogger, env as envSpec, migrate, openDatabase, readEnv, readServiceEnv, runProcess } from '@ziti/platform';
import { createAuthService, migrations } from './app.ts';
import { readAuthConfig } from './config.ts';

const logger = createLogger('auth');
const env = readServiceEnv('AUTH_DATABASE_URL');
const database = await openDatabase({ url: env.databaseUrl, poolSize: env.poolSize });
if (process.argv[2] === 'migrate') {
  const applied = await migrate(database, migrations);
  logger.info({ applied }, 'migrations applied');
  await database.close();
  process.exit(0);
}
const config = readAuthConfig();
const redis = readEnv({ REDIS_URL: envSpec.string(), REDIS_KEY_PREFIX: envSpec.string('ziti:') });
const bus = await NatsBus.connect({ url: env.natsUrl, name: 'auth', namespace: env.busNamespace, logger });
const sessions = new RedisApiSessionStore(redis.REDIS_URL, redis.REDIS_KEY_PREFIX);
await runProcess(createAuthService({ config, database, bus, sessions, logger }), logger, env.healthPort);
