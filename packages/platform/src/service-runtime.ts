import type { Owner } from '@ziti/contracts';
import type { Bus, Consumer, EventEnvelope, Served } from './bus/bus.ts';
import type { Database, Db } from './db/database.ts';
import { queryRows } from './db/database.ts';
import { type Migration, migrate } from './db/migrations.ts';
import { OutboxRelay, startEventConsumer } from './db/outbox.ts';
import { env as envConfig, readEnv } from './config.ts';
import type { Logger } from './logger.ts';
import { type OperationHandlers, serveCalls, serveOperations } from './operations.ts';
import type { RunnableService } from './service-host.ts';

export interface EventSubscription {
  /** Subject filter, e.g. `ziti.evt.auth.identity.>`. */
  subject: string;
  /** Unique per consuming service and subscription; replicas share it. */
  durable: string;
  handle: (tx: Db, event: EventEnvelope) => Promise<void>;
}

export interface ServiceRuntimeOptions {
  owner: Exclude<Owner, 'gateway'>;
  database: Database;
  bus: Bus;
  logger: Logger;
  migrations: Migration[];
  relay: OutboxRelay;
  operations: OperationHandlers;
  calls?: Record<string, (payload: unknown) => Promise<unknown>>;
  subscriptions?: EventSubscription[];
  /** Runs after migrations and before serving (seeding first-start data, loading keys). */
  onStart?: () => Promise<void>;
  onStop?: () => Promise<void>;
  /** Closes the bus on stop (false when the bus is shared, as under `npm start`). */
  ownsBus?: boolean;
}

/**
 * The life cycle every service shares: migrate, run first-start work, start consumers and the
 * outbox relay, then serve. Stopping reverses it: stop taking requests, finish those in flight,
 * stop consuming, flush the outbox, close the database.
 */
export function createServiceRuntime(o: ServiceRuntimeOptions): RunnableService {
  const served: Served[] = [];
  const consumers: Consumer[] = [];
  let started = false;
  return {
    name: o.owner,
    async start() {
      const applied = await migrate(o.database, o.migrations);
      if (applied.length > 0) o.logger.info({ applied }, 'migrations applied');
      await o.onStart?.();
      for (const s of o.subscriptions ?? []) {
        consumers.push(
          await startEventConsumer(o.bus, o.database, { durable: s.durable, subject: s.subject, handle: s.handle }),
        );
      }
      o.relay.start();
      served.push(serveOperations(o.bus, o.owner, o.operations, o.logger));
      if (o.calls) served.push(serveCalls(o.bus, o.owner, o.calls));
      started = true;
    },
    async ready() {
      if (!started) return false;
      await queryRows(o.database.db, 'select 1');
      return true;
    },
    async stop() {
      await Promise.allSettled(served.map((s) => s.drain()));
      await Promise.allSettled(consumers.map((c) => c.stop()));
      await o.relay.stop();
      await o.onStop?.();
      if (o.ownsBus !== false) await o.bus.close();
      await o.database.close();
    },
  };
}

/** Environment every clustered service reads: bus, its own database, health port. */
export function readServiceEnv(databaseVar: string, source: NodeJS.ProcessEnv = process.env) {
  const raw = readEnv(
    {
      NATS_URL: envConfig.string(),
      DATABASE_URL: (_: string | undefined, __: string) => envConfig.string()(source[databaseVar], databaseVar),
      ZITI_BUS_NAMESPACE: envConfig.string(''),
      HEALTH_PORT: envConfig.int(0, 0, 65535),
      DATABASE_POOL_SIZE: envConfig.int(10, 1, 500),
    },
    source,
  );
  return {
    natsUrl: raw.NATS_URL,
    databaseUrl: raw.DATABASE_URL,
    busNamespace: raw.ZITI_BUS_NAMESPACE,
    healthPort: raw.HEALTH_PORT,
    poolSize: raw.DATABASE_POOL_SIZE,
  };
}
