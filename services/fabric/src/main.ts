import 'reflect-metadata';
import { NatsBus, configOrExit, createLogger, exitOnStartFailure, runProcess } from '@ziti/platform';
import { createFabricService } from './app.ts';
import { RedisCircuitStore } from './circuits/redis-circuit.store.ts';
import { readFabricProcessConfig } from './config.ts';

// Every variable is checked before anything connects: one message naming every problem, exit 1.
const { settings: config, nats, redis, healthPort } = configOrExit('fabric', () => readFabricProcessConfig());
const logger = createLogger('fabric');
const bus = await NatsBus.connect({ url: nats.url, name: 'fabric', namespace: nats.namespace, logger }).catch(
  exitOnStartFailure('fabric'),
);
const circuits = new RedisCircuitStore(redis.url, redis.keyPrefix, logger);
await runProcess(createFabricService({ config, bus, circuits, logger }), logger, healthPort);
