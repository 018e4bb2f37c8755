import {
  type Bus,
  type Database,
  type Logger,
  NatsBus,
  RedisApiSessionStore,
  type RunnableService,
  type SourceConsumer,
  createLogger,
  formatLogLine,
  queryRows,
} from '@ziti/platform';
import type { DatabaseService } from '../cli.ts';
import {
  CommandFailure,
  type Io,
  configReaders,
  describeError,
  openServiceDatabase,
  plural,
  requireDatabaseUrls,
} from '../support.ts';

interface ParkedGroup {
  consumer: string;
  source: string;
  reason: string;
  count: number;
}

async function parkedGroups(database: Database): Promise<ParkedGroup[]> {
  return queryRows<ParkedGroup>(
    database.db,
    `select consumer, source, reason, count(*)::int as count from parked_events
      group by consumer, source, reason order by consumer, source, reason`,
  );
}

/**
 * The service's composition root on `database` and `bus`, not started: its consumers carry this
 * build's handlers (what the service's own replicas run once they run this version).
 */
async function compose(
  service: DatabaseService,
  env: NodeJS.ProcessEnv,
  database: Database,
  bus: Bus,
  logger: Logger,
): Promise<RunnableService & { consumers?: SourceConsumer[] }> {
  const shared = { database, bus, logger, ownsBus: false };
  switch (service) {
    case 'auth': {
      const { readAuthProcessConfig } = await import('@ziti/auth/config');
      const { createAuthService } = await import('@ziti/auth/app');
      const config = readAuthProcessConfig(env);
      const sessions = new RedisApiSessionStore(config.redis.url, config.redis.keyPrefix, {
        logger,
        autoPipelining: false,
      });
      return createAuthService({ ...shared, config: config.settings, sessions });
    }
    case 'pki-enrollment': {
      const { readPkiProcessConfig } = await import('@ziti/pki-enrollment/config');
      const { createPkiService } = await import('@ziti/pki-enrollment/app');
      return createPkiService({ ...shared, config: readPkiProcessConfig(env) });
    }
    case 'policy':
      return (await import('@ziti/policy/app')).createPolicyService(shared);
    case 'inventory':
      return (await import('@ziti/inventory/app')).createInventoryService(shared);
    case 'audit': {
      const { readAuditProcessConfig } = await import('@ziti/audit/config');
      const { createAuditService } = await import('@ziti/audit/app');
      return createAuditService({ ...shared, config: readAuditProcessConfig(env) });
    }
  }
}

/** Log lines of the composed service (a handler that still fails says why): readable, on standard error. */
function stderrLogger(service: string, io: Io, debug: boolean): Logger {
  return createLogger(service, debug ? 'debug' : 'warn', {
    write(chunk: string) {
      for (const line of chunk.split('\n')) if (line) io.err(formatLogLine(line).trimEnd());
    },
  });
}

/**
 * Applies the events each service's consumers parked, with this build's handlers (each in one
 * transaction with the removal of its parked row, as the consumer does at start), and reports per
 * consumer what was applied and what is still parked, with why. 0 when nothing is left parked.
 */
export async function replayParked(services: readonly DatabaseService[], io: Io, debug = false): Promise<number> {
  requireDatabaseUrls(services, io.env);
  let left = 0;
  let failed = 0;
  for (const service of services) {
    const database = await openServiceDatabase(service, io.env);
    let closed = false;
    try {
      const before = await parkedGroups(database);
      if (before.length === 0) {
        io.out(`${service}: nothing parked`);
        continue;
      }
      // The service's own configuration: its handlers run here as in its process.
      configReaders[service](io.env);
      const logger = stderrLogger(service, io, debug);
      const bus = await NatsBus.connect({
        url: io.env.NATS_URL!,
        name: `ziti-edge-ops-${service}`,
        namespace: io.env.ZITI_BUS_NAMESPACE ?? '',
        logger,
      }).catch((err: unknown) => {
        throw new CommandFailure([`${service}: NATS cannot be reached: ${describeError(err)}`]);
      });
      try {
        const runtime = await compose(service, io.env, database, bus, logger);
        const applied = new Map<string, number>();
        for (const consumer of runtime.consumers ?? []) {
          if (!before.some((g) => g.consumer === consumer.durable)) continue;
          applied.set(consumer.durable, await consumer.retryParked());
        }
        const after = await parkedGroups(database);
        // Stopping the composed service ends what it opened (the relay's leadership, sessions) and closes the database.
        closed = true;
        await runtime.stop();
        for (const consumer of [...new Set(before.map((g) => g.consumer))]) {
          const still = after.filter((g) => g.consumer === consumer);
          const count = still.reduce((n, g) => n + g.count, 0);
          left += count;
          io.out(
            `${service} ${consumer}: applied ${applied.get(consumer) ?? 0}, ${count === 0 ? 'none still parked' : `${count} still parked`}`,
          );
          for (const g of still) io.out(`  ${plural(g.count, 'event')} of ${g.source}: ${g.reason}`);
        }
      } finally {
        await bus.close().catch(() => undefined);
      }
    } catch (err) {
      failed++;
      if (err instanceof CommandFailure) for (const line of err.lines) io.out(line);
      else if ((err as { problems?: string[] }).problems)
        io.out(`${service}: its configuration: ${(err as { problems: string[] }).problems.join('; ')}`);
      else io.out(`${service}: replay failed: ${describeError(err)}`);
    } finally {
      if (!closed) await database.close().catch(() => undefined);
    }
  }
  if (left > 0) io.err(`${plural(left, 'event')} still parked: see the reasons above`);
  return failed > 0 || left > 0 ? 1 : 0;
}
