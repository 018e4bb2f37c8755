import 'reflect-metadata';
import { NatsBus, RedisApiSessionStore, createLogger, env, readEnv, runProcess } from '@ziti/platform';
import { createGateway } from './app.ts';
import { readGatewayConfig } from './config.ts';

const logger = createLogger('gateway');
const config = readGatewayConfig();
const infra = readEnv({
  NATS_URL: env.string(),
  REDIS_URL: env.string(),
  ZITI_BUS_NAMESPACE: env.string(''),
  REDIS_KEY_PREFIX: env.string('ziti:'),
});
const bus = await NatsBus.connect({
  url: infra.NATS_URL,
  name: 'gateway',
  namespace: infra.ZITI_BUS_NAMESPACE,
  logger,
});
const sessions = new RedisApiSessionStore(infra.REDIS_URL, infra.REDIS_KEY_PREFIX, { logger });
await runProcess(createGateway({ config, bus, sessions, logger }), logger, config.healthPort);
