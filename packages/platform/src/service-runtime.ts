import type { EntityOwner, Owner } from '@ziti/contracts';
import type { Bus, Served } from './bus/bus.ts';
import type { Database } from './db/database.ts';
import { queryRows } from './db/database.ts';
import { type Migration, migrate } from './db/migrations.ts';
import type { OutboxRelay } from './db/outbox.ts';
import { type EventSubscription, SourceConsumer, durableName } from './events/consumer.ts';
import { ConsumerProgress } from './events/progress.ts';
import { env as envConfig, readEnv } from './config.ts';
import type { Logger } from './logger.ts';
import { IdempotentReplies } from './db/idempotency.ts';
import { type OperationHandlers, serveCalls, serveOperations } from './operations.ts';
import type { RunnableService } from './service-host.ts';

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
  /**
   * Runs on stop once no request is served and no event consumed any more, before the outbox relay
   * stops: work that still writes events (auth's queued authentication attempts). What it wrote is
   * published by this replica's relay before it stops, not left for the next leader.
   */
  onDrained?: () => Promise<void>;
  onStop?: () => Promise<void>;
  /** Closes the bus on stop (false when the bus is shared, as under `npm start`). */
  ownsBus?: boolean;
}

/**
 * The life cycle every service shares: migrate, run first-start work, start consumers and the
 * outbox relay, then serve. Stopping reverses it: stop taking requests, finish those in flight,
 * stop consuming, flush the outbox, close the database.
 */
export function createServiceRuntime(o: ServiceRuntimeOptions): RunnableService & {
  /** This service's consumers, one per source (tests and maintenance). */
  consumers: SourceConsumer[];
  progress: ConsumerProgress;
} {
  const served: Served[] = [];
  const bySource = new Map<EntityOwner, EventSubscription>();
  for (const s of o.subscriptions ?? []) {
    const merged = bySource.get(s.source) ?? { source: s.source, handlers: [], readModels: [] };
    for (const h of s.handlers) {
      if (merged.handlers.some((m) => m.type === h.type))
        throw new Error(`${o.owner} handles ${s.source} ${h.type} twice: one handler per event type`);
      merged.handlers.push(h);
    }
    merged.readModels!.push(...(s.readModels ?? []));
    bySource.set(s.source, merged);
  }
  const progress = new ConsumerProgress(
    o.database,
    new Map([...bySource.keys()].map((source) => [source, durableName(o.owner, source)])),
    o.logger,
  );
  const consumers = [...bySource.values()].map(
    (s) =>
      new SourceConsumer({
        owner: o.owner,
        source: s.source,
        handlers: s.handlers,
        readModels: s.readModels ?? [],
        database: o.database,
        bus: o.bus,
        relay: o.relay,
        logger: o.logger,
        progress,
      }),
  );
  let started = false;
  return {
    name: o.owner,
    consumers,
    progress,
    async start() {
      const applied = await migrate(o.database, o.migrations);
      if (applied.length > 0) o.logger.info({ applied }, 'migrations applied');
      await o.onStart?.();
      await progress.start();
      for (const c of consumers) await c.start();
      await o.relay.start();
      served.push(
        serveOperations(
          o.bus,
          o.owner,
          o.operations,
          o.logger,
          (after) => progress.waitFor(after),
          new IdempotentReplies(o.database, o.logger),
        ),
      );
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
      await progress.stop();
      if (o.onDrained) {
        await o.onDrained();
        // A flush the hook's commit woke may be under way: publishing a row twice is harmless (the
        // stream drops a message whose id it has); missing one would leave it to the next leader.
        await o.relay
          .flushAll()
          .catch((err) => o.logger.warn({ err }, 'outbox flush at stop failed; the next relay leader publishes'));
      }
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
