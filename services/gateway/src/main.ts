import 'reflect-metadata';
import {
  NatsBus,
  RedisApiSessionStore,
  configOrExit,
  createLogger,
  exitOnStartFailure,
  runProcess,
} from '@ziti/platform';
import { createGateway } from './app.ts';
import { readGatewayProcessConfig } from './config.ts';
import { SharedRateLimiter } from './edge-auth/shared-rate-limit.adapter.ts';

// Every variable is checked before anything connects: one message naming every problem, exit 1.
const { settings: config, nats, redis } = configOrExit('gateway', () => readGatewayProcessConfig());
const logger = createLogger('gateway');
const bus = await NatsBus.connect({ url: nats.url, name: 'gateway', namespace: nats.namespace, logger }).catch(
  exitOnStartFailure('gateway'),
);
// A Redis that keeps nothing over a restart loses every API session: said at start (issue 25).
const sessions = new RedisApiSessionStore(redis.url, redis.keyPrefix, { logger, reportPersistence: true });
// Every replica draws from the same buckets, in Redis; each counts alone while Redis is down.
const authLimiter = config.authRateLimit?.perMinute
  ? new SharedRateLimiter({ url: redis.url, keyPrefix: redis.keyPrefix, config: config.authRateLimit, logger })
  : undefined;
await runProcess(
  createGateway({ config, bus, sessions, logger, ...(authLimiter ? { authLimiter } : {}) }),
  logger,
  config.healthPort,
);
