import type { Bus, Database, Logger, RunnableService } from '@ziti/platform';
import { OutboxRelay, createServiceRuntime, durableName, readMigrations } from '@ziti/platform';
import type { AuditConfig } from './config.ts';
import { maintenanceWiring } from './maintenance/maintenance.wiring.ts';
import { auditOperations } from './operations.transport.ts';
import { recordsWiring } from './records/records.wiring.ts';
import { retentionWiring } from './retention/retention.wiring.ts';
import type { EventSinks } from './sinks/sinks.transport.ts';
import { startSinksWiring } from './sinks/sinks.wiring.ts';
import { entityOwners } from './trail/entity-kinds.domain.ts';
import { firstResyncsDone } from './trail/rebuilds.store.ts';
import { trailWiring } from './trail/trail.wiring.ts';

export interface AuditServiceDeps {
  config: AuditConfig;
  database: Database;
  bus: Bus;
  logger: Logger;
  ownsBus?: boolean;
  /** How often the retention sweeper runs (default hourly; tests sweep sooner). */
  retentionIntervalMs?: number;
  /**
   * `start` resolves only once every consumer has caught up with its owner the first time (under
   * `npm start`, where the owners started before it): changes made right after the start are recorded.
   * In the cluster the owners may come later, and readiness says when the trail is live instead.
   */
  awaitFirstResyncs?: boolean;
}

export const migrations = readMigrations(new URL('../migrations/', import.meta.url));

/**
 * Composition root of the audit service (issue 24): the trail made from the entity owners' events, its
 * records listed at `GET /extensions/audit-records`, `auditRecord.created` published through its outbox
 * (the change feed), and the retention sweeper.
 */
export function createAuditService(deps: AuditServiceDeps): RunnableService {
  const { database, bus, logger } = deps;
  const relay = new OutboxRelay(database, bus, 'audit', logger);
  const sweeper = retentionWiring(database, logger, {
    retentionDays: deps.config.retentionDays,
    ...(deps.retentionIntervalMs === undefined ? {} : { intervalMs: deps.retentionIntervalMs }),
  });
  const runtime = createServiceRuntime({
    owner: 'audit',
    database,
    bus,
    logger,
    migrations,
    relay,
    calls: maintenanceWiring(database),
    operations: auditOperations({ records: recordsWiring(database) }),
    subscriptions: trailWiring(deps.config.controllerId),
    onStop: () => sweeper.stop(),
    ...(deps.ownsBus === undefined ? {} : { ownsBus: deps.ownsBus }),
  });
  const durables = entityOwners.map((source) => durableName('audit', source));
  let sinks: EventSinks | undefined;
  return {
    name: runtime.name,
    async start() {
      await runtime.start();
      sweeper.start();
      sinks = await startSinksWiring({ bus, logger, database, config: deps.config.sinks }).catch(
        async (err: unknown) => {
          await runtime.stop();
          throw err;
        },
      );
      if (deps.awaitFirstResyncs) {
        const deadline = Date.now() + 60_000;
        while (!(await firstResyncsDone(database.db, durables))) {
          if (Date.now() > deadline) {
            await sinks?.stop();
            await runtime.stop();
            throw new Error('audit: its consumers did not catch up with their owners in 60 s');
          }
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      }
    },
    async ready() {
      return (await runtime.ready()) && (await firstResyncsDone(database.db, durables));
    },
    async stop() {
      await sinks?.stop();
      sinks = undefined;
      await runtime.stop();
    },
  };
}
